package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestRemovalsFleet: two workers on one Postgres. A sync is queued once however often it is
// asked for (River's unique job), and the worker removing people is stopped after its first
// unsubscribe request: the other worker resumes the run and unsubscribes the rest. Every
// person who left is unsubscribed exactly once: no request is repeated, because each
// acknowledged request is recorded (fenced by the run's lease) before the next is sent.
func TestRemovalsFleet(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	const n, leave = 5000, 3000
	b := setup(t, "postgres")
	path := contacts(t, t.TempDir(), n, nil)
	b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path},
		Removed: jobs.RemovedUnsubscribe, MaxRemovals: "100%"}}

	workers := map[string]context.CancelFunc{}
	errs := make(chan error, 2)
	var rts []*jobs.Runtime
	for _, id := range []string{"worker-a", "worker-b"} {
		cfg := b.cfg
		cfg.WorkerID = id
		rt := b.openWith(t, cfg)
		rts = append(rts, rt)
		runCtx, stop := context.WithCancel(ctx)
		workers[id] = stop
		go func() { errs <- rt.Run(runCtx) }()
	}
	st := rts[0].State()
	// A run is done once it is final and the queue recorded its job's end (River completes
	// jobs asynchronously; until then the sync counts as running).
	done := func(id int64) func() bool {
		return func() bool {
			left, err := rts[0].Jobs(ctx)
			require.NoError(t, err)
			return runOf(t, st, id).State.Final() && len(left) == 0
		}
	}

	first, err := rts[0].EnqueueSync(ctx, "crm", false)
	require.NoError(t, err)
	again, err := rts[1].EnqueueSync(ctx, "crm", false)
	require.ErrorIs(t, err, jobs.ErrAlreadyQueued)
	require.Equal(t, first, again, "one sync job, whichever worker asks")
	waitFor(t, time.Minute, "the first sync", done(first))
	require.Equal(t, state.RunCompleted, runOf(t, st, first).State)

	gone := dropLines(t, path, func(i int) bool { return i <= leave })
	require.Len(t, gone, leave)
	b.emu.ResetRequests()
	b.emu.SetFaults(sinktest.Faults{Latency: 200 * time.Millisecond})

	second, err := rts[1].EnqueueSync(ctx, "crm", false)
	require.NoError(t, err)
	waitFor(t, time.Minute, "the first unsubscribe request", func() bool { return unsubscribedRows(b.emu) > 0 })
	remover := runOf(t, st, second).Worker
	require.Contains(t, workers, remover)
	workers[remover]() // stop that worker: it finishes the request in flight and pauses the run
	require.NoError(t, <-errs)
	waitFor(t, time.Minute, "the other worker to finish the run", done(second))

	run := runOf(t, st, second)
	require.Equal(t, state.RunCompleted, run.State)
	require.NotEqual(t, remover, run.Worker, "the other worker resumed the run")
	require.GreaterOrEqual(t, run.Attempts, 2)
	require.Equal(t, int64(leave), run.Counts.Removed)
	require.Equal(t, leave, unsubscribedRows(b.emu), "nobody is unsubscribed twice")
	for _, s := range b.emu.ListSubscribers(b.listID) {
		want := "active"
		if gone[s.Email] {
			want = "unsubscribed"
		}
		require.Equal(t, want, s.Lists[b.listID].Status, s.Email)
	}
	for _, stop := range workers {
		stop()
	}
	require.NoError(t, <-errs)
}
