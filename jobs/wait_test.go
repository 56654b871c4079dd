package jobs_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
)

// TestWaitLeavesTheJobToALiveWorker: while a worker runs, a command that queues a sync or an
// erasure and waits for it (its own runtime on the same database, as `sync --wait` and
// `forget` are) leaves the job to the worker, whose metrics then count it; once the worker
// has stopped, the command works the job itself.
func TestWaitLeavesTheJobToALiveWorker(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: contacts(t, t.TempDir(), 20, nil)}}}
		wcfg := b.cfg
		wcfg.WorkerID = "the-worker"
		worker := b.openWith(t, wcfg)
		metrics := httptest.NewServer(worker.Handler())
		defer metrics.Close()
		workCtx, stopWorker := context.WithCancel(ctx)
		workerDone := make(chan error, 1)
		go func() { workerDone <- worker.Run(workCtx) }()
		waitFor(t, time.Minute, "the worker's heartbeat", func() bool {
			live, err := worker.LiveWorkers(ctx)
			require.NoError(t, err)
			return len(live) == 1 && live[0].ID == "the-worker"
		})

		ccfg := b.cfg
		ccfg.WorkerID = "the-command"
		command := b.openWith(t, ccfg)
		id, err := command.EnqueueSync(ctx, "crm", false)
		require.NoError(t, err)
		run, err := command.Wait(ctx, id, nil)
		require.NoError(t, err)
		require.Equal(t, "the-worker", run.Worker, "sync --wait leaves the job to the live worker")
		require.EqualValues(t, 20, run.Counts.Sent)

		forget, _, err := command.RequestForget(ctx, []string{"person1@example.com"})
		require.NoError(t, err)
		erasure, err := command.Wait(ctx, forget, nil)
		require.NoError(t, err)
		require.Equal(t, "the-worker", erasure.Worker, "forget leaves the job to the live worker")

		body := get(t, metrics.URL+"/metrics")
		require.Contains(t, body, `subsync_rows_total{kind="sync",outcome="sent",sync="crm"} 20`)
		require.Contains(t, body, `subsync_run_duration_seconds_count{kind="sync",outcome="completed",sync="crm"} 1`)
		require.Contains(t, body, `subsync_run_duration_seconds_count{kind="forget",outcome="completed",sync=""} 1`)

		// The worker stops (and says so): the next wait works the job itself.
		stopWorker()
		require.NoError(t, <-workerDone)
		live, err := command.LiveWorkers(ctx)
		require.NoError(t, err)
		require.Empty(t, live, "a worker that stopped is not alive")
		id, err = command.EnqueueSyncArgs(ctx, jobs.SyncArgs{Name: "crm", Full: true})
		require.NoError(t, err)
		run, err = command.Wait(ctx, id, nil)
		require.NoError(t, err)
		require.Equal(t, "the-command", run.Worker, "with no worker alive, the command works the job")
	})
}
