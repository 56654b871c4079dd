package jobs_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/internal/testlog"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/state"
)

// backends are the databases every test runs on.
var backends = []string{"sqlite", "postgres"}

// eachBackend runs fn as a parallel subtest per database.
func eachBackend(t *testing.T, fn func(t *testing.T, backend string)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// bundle is a test's emulator, database and runtime configuration.
type bundle struct {
	emu    *sinktest.Server
	listID int64
	cfg    jobs.Config
	logs   *testlog.Buffer
}

// setup starts an emulator and prepares a fresh database of the backend (a SQLite file in
// a temporary data directory, or a fresh Postgres schema).
func setup(t *testing.T, backend string, opts ...sinktest.Option) *bundle {
	t.Helper()
	emu := sinktest.NewServer(t, opts...)
	b := &bundle{emu: emu, listID: emu.CreateList("Nyhetsbrev"), logs: &testlog.Buffer{}}
	b.cfg = jobs.Config{
		DataDir:         t.TempDir(),
		BatchesInFlight: 4,
		ShutdownTimeout: 10 * time.Second,
		LeaseTTL:        time.Second,
		PollInterval:    20 * time.Millisecond,
		Logger:          slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Sink: sink.Config{BaseURL: emu.URL, UserID: emu.User, APIKey: emu.Key, RequestsPerSecond: -1,
			MaxInFlight: 4, HTTPClient: emu.Client(), BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond},
	}
	if backend == "postgres" {
		b.cfg.DatabaseURL, _ = testdb.PostgresSchema(t)
	}
	return b
}

// open opens a runtime on the bundle's configuration, closed at cleanup.
func (b *bundle) open(t *testing.T) *jobs.Runtime {
	t.Helper()
	rt, err := jobs.Open(context.Background(), b.cfg)
	require.NoError(t, err)
	t.Cleanup(rt.Close)
	return rt
}

// openWith opens a runtime on another configuration of the bundle's database, closed at
// cleanup.
func (b *bundle) openWith(t *testing.T, cfg jobs.Config) *jobs.Runtime {
	t.Helper()
	rt, err := jobs.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(rt.Close)
	return rt
}

// subscribe puts the e-mails into the bundle's list, active, through the service's bulkinsert.
func (b *bundle) subscribe(t *testing.T, emails ...string) {
	t.Helper()
	c, err := sink.New(b.cfg.Sink)
	require.NoError(t, err)
	rows := make([]sink.Subscriber, len(emails))
	for i, e := range emails {
		rows[i] = sink.Subscriber{Email: e}
	}
	res, err := c.BulkInsert(context.Background(), sink.BulkOptions{ListID: b.listID}, rows)
	require.NoError(t, err)
	require.Equal(t, len(emails), res.Sent)
}

// contacts writes a CSV of n contacts (person<i>@example.com, header E-post,Fornavn,
// Etternavn); every row i with invalid(i) gets an address that is not one. It returns the path.
func contacts(t testing.TB, dir string, n int, invalid func(i int) bool) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("contacts-%d.csv", n))
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "E-post,Fornavn,Etternavn")
	for i := 1; i <= n; i++ {
		email := fmt.Sprintf("person%d@example.com", i)
		if invalid != nil && invalid(i) {
			email = fmt.Sprintf("person%d-at-example.com", i)
		}
		fmt.Fprintf(w, "%s,Ola%d,Nordmann\n", email, i)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return path
}

// bulkRows sums the rows of the bulkinsert requests the emulator acknowledged.
func bulkRows(emu *sinktest.Server) (rows, requests int) {
	for _, r := range emu.Requests() {
		if r.Method == "POST" && r.Path == sinktest.V2Prefix+"/subscribers/bulkinsert" && r.Status == 200 {
			rows += r.Rows
			requests++
		}
	}
	return rows, requests
}

// bulkRequests counts the bulkinsert requests into list the emulator answered, and those of
// them it did not acknowledge.
func bulkRequests(emu *sinktest.Server, listID int64) (requests, failed int) {
	for _, r := range emu.Requests() {
		if r.Method == "POST" && r.Path == sinktest.V2Prefix+"/subscribers/bulkinsert" &&
			r.Query.Get("subscriber_list_id") == fmt.Sprint(listID) {
			requests++
			if r.Status != 200 {
				failed++
			}
		}
	}
	return requests, failed
}

// waitFor polls cond every 10ms until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// runOf returns the run of a job, or the zero Run while there is none.
func runOf(t *testing.T, s *state.Store, jobID int64) state.Run {
	t.Helper()
	r, err := s.RunByJob(context.Background(), jobID)
	if err != nil {
		require.ErrorIs(t, err, state.ErrNotFound)
	}
	return r
}

// sqliteSource creates a SQLite database file of a SQL source with the statements given; it
// returns its DSN and the database, closed at cleanup.
func sqliteSource(t *testing.T, statements string) (string, *sql.DB) {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "crm.db")
	db, err := sql.Open("sqlite", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec(statements)
	require.NoError(t, err)
	return dsn, db
}

// syncAfterQueueEmpties queues a sync once the queue holds no job any more (River records a
// job's end asynchronously: a sync whose run just ended may still count as running), and
// waits for its run; the error is Wait's.
func syncAfterQueueEmpties(t *testing.T, rt *jobs.Runtime, args jobs.SyncArgs) (state.Run, error) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, time.Minute, "the queue to empty", func() bool {
		left, err := rt.Jobs(ctx)
		require.NoError(t, err)
		return len(left) == 0
	})
	id, err := rt.EnqueueSyncArgs(ctx, args)
	require.NoError(t, err)
	return rt.Wait(ctx, id, nil)
}

// running runs the runtime as a worker until the test ends (its error must be nil then).
func running(t *testing.T, rt *jobs.Runtime) {
	t.Helper()
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
}
