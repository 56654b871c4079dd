package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestFleet runs two workers (each its own River client and pool) on one Postgres: every
// tick of a scheduled sync runs once, and an import is worked by one worker at a time.
func TestFleet(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	b := setup(t, "postgres")
	syncList := b.emu.CreateList("Synket")
	syncFile := contacts(t, t.TempDir(), 50, nil)
	b.cfg.Syncs = []jobs.SyncSpec{{Name: "nightly", Schedule: "@every 1s", ListID: syncList,
		Source: sources.Config{Path: syncFile}}}

	var rts []*jobs.Runtime
	errs := make(chan error, 2)
	runCtx, stop := context.WithCancel(ctx)
	for _, id := range []string{"worker-a", "worker-b"} {
		cfg := b.cfg
		cfg.WorkerID = id
		rt, err := jobs.Open(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(rt.Close)
		rts = append(rts, rt)
		go func() { errs <- rt.Run(runCtx) }()
	}
	st := rts[0].State()

	const ticks = 4
	completedSyncs := func() []state.Run {
		runs, err := st.Runs(ctx, state.RunFilter{Kind: state.KindSync, Name: "nightly", States: []state.RunState{state.RunCompleted}})
		require.NoError(t, err)
		return runs
	}
	waitFor(t, time.Minute, "4 scheduled syncs", func() bool { return len(completedSyncs()) >= ticks })

	// An import while the schedule keeps ticking.
	path := contacts(t, t.TempDir(), 20_000, nil)
	jobID, err := rts[1].EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
	require.NoError(t, err)
	waitFor(t, time.Minute, "the import", func() bool { return runOf(t, st, jobID).State == state.RunCompleted })

	stop()
	for range rts {
		require.NoError(t, <-errs)
	}

	// Each tick ran once: one job per scheduled time, one run per tick.
	runs := completedSyncs()
	seen := map[time.Time]bool{}
	for _, r := range runs {
		require.False(t, r.ScheduledAt.IsZero())
		require.False(t, seen[r.ScheduledAt], "tick %s ran twice", r.ScheduledAt)
		seen[r.ScheduledAt] = true
		require.Equal(t, 1, r.Attempts)
	}
	dupTicks := queryText(t, st.DB(), `SELECT scheduled_at FROM river_job WHERE kind = 'sync'
GROUP BY scheduled_at HAVING COUNT(*) > 1`)
	require.Empty(t, dupTicks, "no tick was inserted twice")
	// The first sync sent the 50 rows; later ones found them unchanged.
	require.Equal(t, 50, sentRows(b.emu, syncList))
	require.Equal(t, int64(50), runs[len(runs)-1].Counts.Sent)
	require.Equal(t, int64(50), runs[0].Counts.Unchanged)

	// The import was worked by one worker, once: every row sent exactly once.
	run := runOf(t, st, jobID)
	require.Equal(t, 1, run.Attempts)
	require.Contains(t, []string{"worker-a", "worker-b"}, run.Worker)
	require.Equal(t, int64(20_000), run.Counts.Sent)
	require.Equal(t, 20_000, sentRows(b.emu, b.listID))
	t.Logf("%d scheduled syncs; import worked by %s", len(runs), run.Worker)
}
