package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// TestScheduledPruning: the worker prunes on retention's schedule: the rejects of a run that
// finished before retention.rejects go, the run and its counts stay.
func TestScheduledPruning(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		b.cfg.Retention = jobs.RetentionSpec{Rejects: time.Hour, Schedule: "@every 1s"}
		rt := b.open(t)
		path := contacts(t, t.TempDir(), 100, func(i int) bool { return i%10 == 0 })
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		run, err := rt.Wait(ctx, id, nil)
		require.NoError(t, err)
		require.Equal(t, int64(10), run.Counts.Rejected)
		db := rt.State().DB()
		_, err = db.ExecContext(ctx, "UPDATE subsync_run SET finished_at = $1 WHERE id = $2",
			time.Now().Add(-2*time.Hour).UnixMicro(), run.ID)
		require.NoError(t, err)

		running(t, rt)
		waitFor(t, time.Minute, "the scheduled pruning", func() bool {
			return strings.Contains(b.logs.String(), `msg="pruned by the retention policy" rejects=10`)
		})
		var rejects int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_reject WHERE run_id = $1", run.ID).Scan(&rejects))
		require.Zero(t, rejects)
		got := runOf(t, rt.State(), id)
		require.Equal(t, state.RunCompleted, got.State)
		require.Equal(t, int64(10), got.Counts.Rejected, "the counts stay")
		require.False(t, got.RejectsPrunedAt.IsZero())
	})
}
