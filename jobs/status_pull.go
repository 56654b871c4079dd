package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/subsync/subsync/state"
)

// statusCursor names the cursor of the status pull in state.
const statusCursor = "status"

// StatusPullArgs are the arguments of a status pull job (there are none).
type StatusPullArgs struct{}

// Kind is the job kind.
func (StatusPullArgs) Kind() string { return KindStatusPull }

// InsertOpts keep at most one status pull queued or running.
func (StatusPullArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByState: activeStates}}
}

// EnqueueStatusPull queues a status pull now. If one is already queued or running, it
// returns that job's id with an error wrapping ErrAlreadyQueued.
func (rt *Runtime) EnqueueStatusPull(ctx context.Context) (int64, error) {
	res, err := rt.q.Insert(ctx, StatusPullArgs{}, nil)
	if err != nil {
		return 0, fmt.Errorf("queue status pull: %w", err)
	}
	if res.UniqueSkippedAsDuplicate {
		return res.Job.ID, fmt.Errorf("a status pull is %w as job %d", ErrAlreadyQueued, res.Job.ID)
	}
	return res.Job.ID, nil
}

// StatusPullWorker works status pull jobs.
type StatusPullWorker struct {
	river.WorkerDefaults[StatusPullArgs]
	rt *Runtime
}

// Timeout bounds one status pull.
func (w *StatusPullWorker) Timeout(*river.Job[StatusPullArgs]) time.Duration { return 10 * time.Minute }

// Work fetches the status changes since the cursor (minus the overlap), records the new
// ones in the status log and the suppression list (queuing write-backs), and advances the
// cursor. Pulling twice changes nothing the second time.
func (w *StatusPullWorker) Work(ctx context.Context, job *river.Job[StatusPullArgs]) error {
	rt := w.rt
	return rt.work(ctx, job.JobRow, runDesc{kind: KindStatusPull, name: "status"}, func(ctx context.Context, a *attempt) error {
		if rt.sinkErr != nil {
			return permanent(fmt.Errorf("subscriber service client: %w", rt.sinkErr))
		}
		cursor, err := rt.store.StatusCursor(ctx, statusCursor)
		if err != nil {
			return err
		}
		var from time.Time
		if !cursor.IsZero() {
			from = cursor.Add(-rt.cfg.StatusPull.Overlap)
		}
		started := time.Now().UTC()
		changes, err := rt.sink.StatusChanges(ctx, from, time.Time{})
		if err != nil {
			return fmt.Errorf("fetch status changes: %w", err)
		}
		recs := make([]state.StatusChange, len(changes))
		for i, c := range changes {
			recs[i] = state.StatusChange{Email: c.Email, Status: c.Status, StatusMobile: c.StatusMobile,
				ListID: c.ListID, SubscriberID: c.SubscriberID, ChangedAt: c.DateUpdated}
		}
		added, err := rt.store.RecordStatusChanges(ctx, recs, rt.cfg.StatusPull.WriteBackTargets)
		if err != nil {
			return err
		}
		delta := state.Counts{Read: int64(len(changes)), Duplicates: int64(len(changes) - added)}
		if err := rt.store.Checkpoint(ctx, state.Checkpoint{RunID: a.run.ID, Owner: a.owner, TTL: rt.cfg.LeaseTTL,
			Position: int64(len(changes)), Delta: delta}); err != nil {
			return err
		}
		rt.metrics.addCounts(KindStatusPull, delta)
		a.log.InfoContext(ctx, "status changes pulled", "fetched", len(changes), "new", added)
		return rt.store.AdvanceStatusCursor(ctx, statusCursor, started)
	})
}
