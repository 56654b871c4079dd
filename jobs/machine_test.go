package jobs_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/state"
)

// Faults of the machine under a run: the queue's database going away, a full disk, a worker
// paused past its lease.

// TestPostgresRestartMidRun: the Postgres server of the queue (a throwaway one this test
// starts, never the shared server) goes away in the middle of an import, after some batches
// are checkpointed, as a crash would (no shutdown checkpoint, every connection cut), and comes
// back. The worker process rides it out; the run resumes from its checkpoint and completes
// with exact books: every valid row delivered and counted once, every invalid one rejected
// once, at most the batches in flight at the crash sent again.
func TestPostgresRestartMidRun(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	b := setup(t, "sqlite", sinktest.WithFaults(sinktest.Faults{Latency: 20 * time.Millisecond}))
	b.cfg.DatabaseURL = pg.URL
	const n = 60_000
	invalid := func(i int) bool { return i%997 == 0 }
	path := contacts(t, t.TempDir(), n, invalid)
	rt := b.open(t) // the parent queues and reads state; the worker is a child process
	jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
	require.NoError(t, err)

	w := startWorker(t, b)
	waitFor(t, time.Minute, "15,000 rows checkpointed", func() bool { return runOf(t, rt.State(), jobID).Position >= 15_000 })
	before := runOf(t, rt.State(), jobID)
	pg.Stop(t)
	waitFor(t, time.Minute, "the worker to notice the database gone", func() bool {
		return strings.Contains(w.output.String(), "lease sweep failed") // every half lease while it is gone
	})
	sentWhileDown := sentRows(b.emu, b.listID)
	pg.Start(t)
	t.Logf("database stopped at position %d (%d rows sent), started again with %d rows sent",
		before.Position, before.Counts.Sent, sentWhileDown)

	waitFor(t, 3*time.Minute, "the run to complete", func() bool {
		run, err := rt.State().RunByJob(ctx, jobID)
		return err == nil && run.State == state.RunCompleted // errors while the pool reconnects
	})
	waitFor(t, time.Minute, "the queue to empty", func() bool {
		left, err := rt.Jobs(ctx)
		return err == nil && len(left) == 0
	})
	w.stop(t, 30*time.Second)

	run := requireExactBooks(t, b, rt, jobID, n, invalid)
	require.Greater(t, run.Attempts, 1, "the run resumed in a new attempt")
	nValid := n - n/997
	resent := sentRows(b.emu, b.listID) - nValid
	t.Logf("attempts %d; rows acknowledged %d for %d valid rows: %d sent again (limit %d)", run.Attempts,
		sentRows(b.emu, b.listID), nValid, resent, b.cfg.BatchesInFlight*1000)
	require.GreaterOrEqual(t, resent, 0)
	require.LessOrEqual(t, resent, b.cfg.BatchesInFlight*1000, "at most the batches in flight at the crash are sent again")
	var staged int
	require.NoError(t, rt.State().DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_staged_file").Scan(&staged))
	require.Zero(t, staged, "the staged copy is deleted when the run ends")
	if t.Failed() {
		t.Logf("postgres log:\n%s", pg.Log())
	}
}

// countingProxy is a worker's own way to the emulator: it counts the bulkinserts the worker
// sends.
type countingProxy struct {
	URL     string
	bulk    atomic.Int64
	tooMany atomic.Int64 // 429 answers
	last    atomic.Int64 // when the last 429 was answered, in Unix nanoseconds
}

// lastTooMany is when the proxy answered the last 429.
func (p *countingProxy) lastTooMany() time.Time { return time.Unix(0, p.last.Load()) }

func newCountingProxy(t *testing.T, emu *sinktest.Server) *countingProxy {
	t.Helper()
	target, err := url.Parse(emu.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	p := &countingProxy{}
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.StatusCode == http.StatusTooManyRequests {
			p.last.Store(time.Now().UnixNano())
			p.tooMany.Add(1)
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/subscribers/bulkinsert") {
			p.bulk.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL + target.Path
	return p
}

// pauseSetup prepares a bundle for a test that pauses a worker: on Postgres, a throwaway
// server of the test's own, so that the test can see every session of it (see quiescent).
func pauseSetup(t *testing.T, backend string, faults sinktest.Faults) *bundle {
	t.Helper()
	b := setup(t, "sqlite", sinktest.WithFaults(faults))
	if backend == "postgres" {
		b.cfg.DatabaseURL = testdb.StartPostgres(t).URL
	}
	return b
}

// quiescent reports whether no stopped worker holds locks: a worker stopped in the middle of
// a transaction holds them (SQLite's write lock; on Postgres its rows') until it continues,
// and the other workers wait for it. On SQLite the run's row must be writable within two
// seconds; on Postgres no other session of the test's own server may be in a transaction.
func quiescent(t *testing.T, st *state.Store, jobID int64) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if st.Dialect() == state.Postgres {
		var n int
		require.NoError(t, st.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`).Scan(&n))
		return n == 0
	}
	_, err := st.DB().ExecContext(ctx, "UPDATE subsync_run SET updated_at = updated_at WHERE job_id = $1", jobID)
	return err == nil
}

// TestWorkerPausedPastItsLease: a worker process is stopped (SIGSTOP) in the middle of an
// import for longer than its lease; another worker takes the run over and goes on. When the
// first one is continued (SIGCONT), it notices that it lost the run and stops it without
// sending another batch; the run completes with every row delivered and counted once.
func TestWorkerPausedPastItsLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := pauseSetup(t, backend, sinktest.Faults{Latency: 50 * time.Millisecond})
		const n = 100_000
		invalid := func(i int) bool { return i%997 == 0 }
		path := contacts(t, t.TempDir(), n, invalid)
		rt := b.open(t) // the parent queues and reads state; the workers are child processes
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)

		viaA := newCountingProxy(t, b.emu)
		a := startWorkerVia(t, b, viaA.URL)
		waitFor(t, time.Minute, "10,000 rows checkpointed", func() bool { return runOf(t, rt.State(), jobID).Position >= 10_000 })
		for try := 1; ; try++ {
			require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
			if quiescent(t, rt.State(), jobID) {
				break
			}
			// Stopped inside a transaction: let it finish one and stop it again.
			require.Less(t, try, 10, "the worker was stopped inside a transaction ten times")
			position := runOf(t, rt.State(), jobID).Position
			require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
			waitFor(t, time.Minute, "another checkpoint", func() bool { return runOf(t, rt.State(), jobID).Position > position })
		}
		stopped := runOf(t, rt.State(), jobID)
		t.Logf("%s: worker %s stopped at position %d", backend, stopped.Worker, stopped.Position)

		viaB := newCountingProxy(t, b.emu)
		startWorkerVia(t, b, viaB.URL)
		waitFor(t, time.Minute, "the second worker to take the run over and send", func() bool {
			run := runOf(t, rt.State(), jobID)
			return run.Worker != stopped.Worker && run.Position >= stopped.Position+10_000
		})
		sentByA := viaA.bulk.Load() // everything the first one sent before it stopped has arrived
		require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
		waitFor(t, time.Minute, "the first worker to notice", func() bool {
			return strings.Contains(a.output.String(), "another worker took the run over")
		})
		require.Equal(t, sentByA, viaA.bulk.Load(), "the first worker sends nothing once continued")

		waitFor(t, 2*time.Minute, "the run to complete", func() bool {
			return runOf(t, rt.State(), jobID).State == state.RunCompleted
		})
		waitFor(t, time.Minute, "the queue to empty", func() bool {
			left, err := rt.Jobs(ctx)
			require.NoError(t, err)
			return len(left) == 0
		})
		require.Equal(t, sentByA, viaA.bulk.Load(), "the first worker never sends again")
		run := requireExactBooks(t, b, rt, jobID, n, invalid)
		nValid := n - n/997
		resent := sentRows(b.emu, b.listID) - nValid
		t.Logf("%s: attempts %d; bulkinserts by the first worker %d, by the second %d; %d rows sent again (limit %d)",
			backend, run.Attempts, sentByA, viaB.bulk.Load(), resent, b.cfg.BatchesInFlight*1000)
		require.LessOrEqual(t, resent, b.cfg.BatchesInFlight*1000, "at most the batches in flight at the pause are sent again")
	})
}

// TestWorkerPausedInARetryWait: a worker process waiting out the service's Retry-After inside
// a request is stopped (SIGSTOP) past its lease and past that wait; another worker takes the
// run over. Continued, the first worker must not send the request again: its lease is gone.
func TestWorkerPausedInARetryWait(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		normal := sinktest.Faults{Latency: 50 * time.Millisecond}
		b := pauseSetup(t, backend, normal)
		b.cfg.Sink.RetryAfterCap = 10 * time.Second // a Retry-After of a second is waited out inside the request
		const n = 60_000
		invalid := func(i int) bool { return i%997 == 0 }
		path := contacts(t, t.TempDir(), n, invalid)
		rt := b.open(t)
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)

		viaA := newCountingProxy(t, b.emu)
		a := startWorkerVia(t, b, viaA.URL)
		waitFor(t, time.Minute, "10,000 rows checkpointed", func() bool { return runOf(t, rt.State(), jobID).Position >= 10_000 })
		tooMany := normal
		tooMany.TooManyRate, tooMany.RetryAfter = 1, time.Second
		b.emu.SetFaults(tooMany)
		for try := 1; ; try++ {
			seen := viaA.tooMany.Load()
			waitFor(t, time.Minute, "a 429 to the worker", func() bool { return viaA.tooMany.Load() > seen })
			require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
			if quiescent(t, rt.State(), jobID) {
				break
			}
			require.Less(t, try, 10, "the worker was stopped inside a transaction ten times")
			require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
		}
		stopped := runOf(t, rt.State(), jobID)
		b.emu.SetFaults(normal)

		startWorkerVia(t, b, newCountingProxy(t, b.emu).URL)
		waitFor(t, time.Minute, "the second worker to take the run over and send", func() bool {
			run := runOf(t, rt.State(), jobID)
			return run.Worker != stopped.Worker && run.Position >= stopped.Position+10_000
		})
		// The first worker's wait of a second (and a tenth) for the service is over: continued,
		// it would send at once.
		waitFor(t, time.Minute, "the Retry-After to pass", func() bool { return time.Since(viaA.lastTooMany()) > 1500*time.Millisecond })
		sentByA := viaA.bulk.Load()
		require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
		waitFor(t, time.Minute, "the first worker to notice", func() bool {
			return strings.Contains(a.output.String(), "another worker took the run over")
		})
		require.Equal(t, sentByA, viaA.bulk.Load(), "the first worker sends nothing once continued")

		waitFor(t, 2*time.Minute, "the run to complete", func() bool {
			return runOf(t, rt.State(), jobID).State == state.RunCompleted
		})
		waitFor(t, time.Minute, "the queue to empty", func() bool {
			left, err := rt.Jobs(ctx)
			require.NoError(t, err)
			return len(left) == 0
		})
		require.Equal(t, sentByA, viaA.bulk.Load(), "the first worker never sends again")
		requireExactBooks(t, b, rt, jobID, n, invalid)
	})
}
