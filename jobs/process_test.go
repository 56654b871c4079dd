package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testlog"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/state"
)

// workerEnv makes the test binary a worker process: TestMain reads the worker's
// configuration from it and runs the jobs runtime, as `subsync run` does.
const workerEnv = "SUBSYNC_JOBS_TEST_WORKER"

// workerConfig is what a worker process is told; the API key comes from SUBSYNC_API_KEY,
// as in production.
type workerConfig struct {
	DatabaseURL     string        `json:"database_url"`
	DataDir         string        `json:"data_dir"`
	SinkURL         string        `json:"sink_url"`
	UserID          string        `json:"user_id"`
	BatchesInFlight int           `json:"batches_in_flight"`
	LeaseTTL        time.Duration `json:"lease_ttl"`
	ShutdownTimeout time.Duration `json:"shutdown_timeout"`
	RetryAfterCap   time.Duration `json:"retry_after_cap,omitempty"`
	MaxAttempts     int           `json:"max_attempts,omitempty"`
}

func TestMain(m *testing.M) {
	if raw := os.Getenv(workerEnv); raw != "" {
		os.Exit(workerMain(raw))
	}
	os.Exit(m.Run())
}

// workerMain is the worker process: the runtime on a signal context, as the CLI runs it.
func workerMain(raw string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var c workerConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		log.Error("bad worker configuration", "error", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rt, err := jobs.Open(ctx, jobs.Config{
		DatabaseURL: c.DatabaseURL, DataDir: c.DataDir, BatchesInFlight: c.BatchesInFlight,
		LeaseTTL: c.LeaseTTL, ShutdownTimeout: c.ShutdownTimeout, Logger: log,
		Sink: sink.Config{BaseURL: c.SinkURL, UserID: c.UserID, APIKey: os.Getenv("SUBSYNC_API_KEY"),
			RequestsPerSecond: -1, MaxInFlight: max(4, c.BatchesInFlight), BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
			RetryAfterCap: c.RetryAfterCap, MaxAttempts: c.MaxAttempts},
	})
	if err != nil {
		log.Error("open", "error", err)
		return 1
	}
	defer rt.Close()
	if err := rt.Run(ctx); err != nil {
		log.Error("run", "error", err)
		return 1
	}
	return 0
}

// worker is a worker process started by a test.
type worker struct {
	cmd    *exec.Cmd
	output *testlog.Buffer
	done   chan struct{}
	err    error
}

// startWorker starts a worker process on the bundle's database and emulator.
func startWorker(t *testing.T, b *bundle) *worker {
	t.Helper()
	return startWorkerVia(t, b, b.emu.URL)
}

// startWorkerVia starts a worker process on the bundle's database that reaches the emulator
// at sinkURL (a proxy in front of it).
func startWorkerVia(t *testing.T, b *bundle, sinkURL string) *worker {
	t.Helper()
	raw, err := json.Marshal(workerConfig{DatabaseURL: b.cfg.DatabaseURL, DataDir: b.cfg.DataDir, SinkURL: sinkURL,
		UserID: b.emu.User, BatchesInFlight: b.cfg.BatchesInFlight, LeaseTTL: b.cfg.LeaseTTL,
		ShutdownTimeout: b.cfg.ShutdownTimeout, RetryAfterCap: b.cfg.Sink.RetryAfterCap, MaxAttempts: b.cfg.Sink.MaxAttempts})
	require.NoError(t, err)
	w := &worker{output: &testlog.Buffer{}, done: make(chan struct{})}
	w.cmd = exec.Command(os.Args[0], "-test.run=^$")
	w.cmd.Env = append(os.Environ(), workerEnv+"="+string(raw), "SUBSYNC_API_KEY="+b.emu.Key)
	w.cmd.Stdout, w.cmd.Stderr = w.output, w.output
	require.NoError(t, w.cmd.Start())
	go func() {
		w.err = w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = w.cmd.Process.Kill()
			<-w.done
		}
		if t.Failed() {
			t.Logf("worker %d output:\n%s", w.cmd.Process.Pid, w.output.String())
		}
	})
	return w
}

// kill kills the worker with SIGKILL and waits for it to be gone.
func (w *worker) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
	<-w.done
}

// stop sends SIGTERM and returns how long the worker took to exit, requiring a clean exit
// within limit.
func (w *worker) stop(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-w.done:
	case <-time.After(limit):
		t.Fatalf("worker did not exit within %s of SIGTERM", limit)
	}
	took := time.Since(start)
	require.NoError(t, w.err, "worker exit status; output:\n%s", w.output.String())
	return took
}

// sentRows returns the rows of acknowledged bulkinserts into list.
func sentRows(emu *sinktest.Server, listID int64) int {
	rows := 0
	for _, r := range emu.Requests() {
		if r.Method == "POST" && r.Path == sinktest.V2Prefix+"/subscribers/bulkinsert" && r.Status == 200 &&
			r.Query.Get("subscriber_list_id") == fmt.Sprint(listID) {
			rows += r.Rows
		}
	}
	return rows
}

// TestKillAndRestart kills the worker process twice during a 200,000-row import and restarts
// it each time: every valid row arrives, each kill costs at most the batches in flight, and
// the history shows one completed run with exact counts.
func TestKillAndRestart(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend, sinktest.WithFaults(sinktest.Faults{Latency: 20 * time.Millisecond}))
		const n = 200_000
		invalid := func(i int) bool { return i%997 == 0 }
		const nInvalid = n / 997
		path := contacts(t, t.TempDir(), n, invalid)
		rt := b.open(t) // the parent only queues and reads state; workers are child processes
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)

		sentAtLeast := func(rows int) func() bool {
			return func() bool { return sentRows(b.emu, b.listID) >= rows }
		}
		w := startWorker(t, b)
		waitFor(t, time.Minute, "50,000 rows sent", sentAtLeast(50_000))
		w.kill(t)
		before := runOf(t, rt.State(), jobID)
		require.Equal(t, state.RunRunning, before.State, "a killed worker leaves its run claimed")
		require.Less(t, before.Position, int64(n))

		w = startWorker(t, b)
		waitFor(t, time.Minute, "120,000 rows sent", sentAtLeast(120_000))
		w.kill(t)

		w = startWorker(t, b)
		waitFor(t, 2*time.Minute, "the run to complete", func() bool {
			return runOf(t, rt.State(), jobID).State == state.RunCompleted
		})
		// River records a job's end asynchronously; under load the sweeper may also have
		// handed the job back once more (its new attempt only finds the run done). Either
		// way the queue empties while the worker runs.
		waitFor(t, time.Minute, "the queue to empty", func() bool {
			left, err := rt.Jobs(ctx)
			require.NoError(t, err)
			return len(left) == 0
		})
		w.stop(t, 30*time.Second)

		run := runOf(t, rt.State(), jobID)
		require.Equal(t, 3, run.Attempts)
		require.Empty(t, run.Error)
		require.Equal(t, int64(n), run.Position)
		require.Equal(t, int64(n), run.Counts.Read)
		require.Equal(t, int64(nInvalid), run.Counts.Rejected)
		require.Equal(t, int64(n-nInvalid), run.Counts.Sent, "rows acknowledged before a kill are counted once")
		require.GreaterOrEqual(t, run.Counts.Batches, int64((n-nInvalid+999)/1000))
		runs, err := rt.State().Runs(ctx, state.RunFilter{})
		require.NoError(t, err)
		require.Len(t, runs, 1, "one run, resumed twice")

		rejects := 0
		require.NoError(t, rt.State().Rejects(ctx, run.ID, func(state.Reject) error { rejects++; return nil }))
		require.Equal(t, nInvalid, rejects, "each reject recorded once")

		// Every valid row arrived; each kill re-sent at most the batches in flight.
		subs := b.emu.ListSubscribers(b.listID)
		require.Len(t, subs, n-nInvalid)
		for _, i := range []int{1, 996, 998, 50_000, 120_001, n} {
			_, ok := b.emu.SubscriberByEmail(fmt.Sprintf("person%d@example.com", i))
			require.True(t, ok, "person%d", i)
		}
		sent := sentRows(b.emu, b.listID)
		resent := sent - (n - nInvalid)
		t.Logf("%s: rows acknowledged %d, re-sent after kills %d (limit %d)", backend, sent, resent, 2*b.cfg.BatchesInFlight*1000)
		require.GreaterOrEqual(t, resent, 0)
		require.LessOrEqual(t, resent, 2*b.cfg.BatchesInFlight*sink.MaxBatchRows)

		jobsLeft, err := rt.Jobs(ctx)
		require.NoError(t, err)
		require.Empty(t, jobsLeft)
		var staged int
		require.NoError(t, rt.State().DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_staged_file").Scan(&staged))
		require.Zero(t, staged, "a staged copy is deleted when its run ends")
	})
}

// TestGracefulStop stops the worker with SIGTERM during an import: it exits cleanly within
// its shutdown timeout, in-flight batches are checkpointed, and the next start resumes
// without sending anything twice.
func TestGracefulStop(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend, sinktest.WithFaults(sinktest.Faults{Latency: 20 * time.Millisecond}))
		b.cfg.ShutdownTimeout = 5 * time.Second
		const n = 60_000
		path := contacts(t, t.TempDir(), n, nil)
		rt := b.open(t)
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)

		w := startWorker(t, b)
		waitFor(t, time.Minute, "15,000 rows sent", func() bool { return sentRows(b.emu, b.listID) >= 15_000 })
		took := w.stop(t, b.cfg.ShutdownTimeout+5*time.Second)
		t.Logf("%s: worker stopped in %s", backend, took)

		paused := runOf(t, rt.State(), jobID)
		require.Equal(t, state.RunInterrupted, paused.State)
		require.Empty(t, paused.LeaseOwner, "a stopped worker releases its run")
		require.Equal(t, int64(sentRows(b.emu, b.listID)), paused.Counts.Sent,
			"everything acknowledged before the stop is checkpointed")
		require.Less(t, paused.Position, int64(n))

		w = startWorker(t, b)
		waitFor(t, time.Minute, "the run to complete", func() bool {
			return runOf(t, rt.State(), jobID).State == state.RunCompleted
		})
		w.stop(t, 30*time.Second)

		run := runOf(t, rt.State(), jobID)
		require.Equal(t, 2, run.Attempts)
		require.Equal(t, state.Counts{Read: n, Sent: n, Batches: run.Counts.Batches, Requests: run.Counts.Requests}, run.Counts)
		require.Len(t, b.emu.ListSubscribers(b.listID), n)
		require.Equal(t, n, sentRows(b.emu, b.listID), "a graceful stop sends nothing twice")
	})
}
