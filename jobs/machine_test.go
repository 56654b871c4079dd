package jobs_test

import (
	"context"
	"strings"
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
