package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/subsync/subsync/state"
)

// A long-lived worker (Run) keeps a heartbeat in the database, so that a command waiting for
// a run (Wait: import, sync, status pull, forget with --wait) leaves the job to it instead of
// working it in its own process: the worker's metrics, logs and pages then tell the whole
// story. The heartbeat is renewed every third of the lease TTL and counts for one TTL, by the
// database's clock, as a run's lease does; a worker that stops gracefully deletes it at once.

// heartbeat records this worker as alive until ctx ends, then as gone. It returns once the
// first heartbeat is written (or failed), so that a Wait started next sees it; done is
// closed when the loop has ended and the worker's row is deleted.
func (rt *Runtime) heartbeat(ctx context.Context) (done <-chan struct{}) {
	ttl := rt.cfg.LeaseTTL
	beat := func() {
		if err := rt.store.WorkerHeartbeat(ctx, rt.workerID, rt.started, ttl); err != nil && ctx.Err() == nil {
			rt.log.WarnContext(ctx, "could not record the worker's heartbeat", slog.Any("error", err))
		}
	}
	beat()
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				if err := rt.store.WorkerGone(gctx, rt.workerID); err != nil {
					rt.log.WarnContext(gctx, "could not record that the worker stopped", slog.Any("error", err))
				}
				cancel()
				return
			case <-t.C:
				beat()
			}
		}
	}()
	return ch
}

// LiveWorkers lists the long-lived workers of the database whose heartbeat is current.
func (rt *Runtime) LiveWorkers(ctx context.Context) ([]state.Worker, error) {
	return rt.store.LiveWorkers(ctx)
}

// liveWorker returns a live long-lived worker other than this process, if there is one.
func (rt *Runtime) liveWorker(ctx context.Context) (state.Worker, bool, error) {
	ws, err := rt.store.LiveWorkers(ctx)
	if err != nil {
		return state.Worker{}, false, err
	}
	for _, w := range ws {
		if w.ID != rt.workerID {
			return w, true, nil
		}
	}
	return state.Worker{}, false, nil
}
