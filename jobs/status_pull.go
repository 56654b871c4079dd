package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/riverqueue/river"

	"github.com/subsync/subsync/sink"
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

// Work runs one status pull:
//
//  1. fetches GET /subscriberstatus with from_date = the cursor minus the overlap (nothing
//     on the first pull: the service's default window) and to_date = now;
//  2. with Reconcile, reads every sync's list for subscribers the service holds as
//     unsubscribed or bounced (updated since the same from_date);
//  3. records the changes not seen before (by e-mail, status, time and list) in the status
//     log and the suppression list, queuing each for write-back, in one transaction;
//  4. advances the cursor to the to_date of step 1 — only now that the changes are stored;
//  5. writes every pending change back to the source (this pull's and any earlier one's that
//     failed), and marks them done.
//
// A failed write-back does not fail the pull (the suppression list is what protects people,
// and it is up to date): the run completes with the failure as its message, and the changes
// stay pending for the next pull. Pulling twice changes nothing the second time.
//
// The run's counts: read = changes fetched, duplicates = those already recorded, sent =
// changes written back to the source.
func (w *StatusPullWorker) Work(ctx context.Context, job *river.Job[StatusPullArgs]) error {
	rt := w.rt
	return rt.work(ctx, job.JobRow, runDesc{kind: KindStatusPull, name: "status"}, func(ctx context.Context, a *attempt) error {
		if rt.sinkErr != nil {
			return permanent(fmt.Errorf("subscriber service client: %w", rt.sinkErr))
		}
		wb, err := newWriteBacker(rt.cfg.StatusPull.WriteBack)
		if err != nil {
			return permanent(err)
		}
		var targets []string
		if wb != nil {
			targets = []string{rt.cfg.StatusPull.WriteBack.Kind}
		}
		cursor, err := rt.store.StatusCursor(ctx, statusCursor)
		if err != nil {
			return err
		}
		var from time.Time
		if !cursor.IsZero() {
			from = cursor.Add(-rt.cfg.StatusPull.Overlap)
		}
		// Milliseconds: the precision of the service's times.
		to := time.Now().UTC().Truncate(time.Millisecond)
		changes, err := rt.sink.StatusChanges(ctx, from, to)
		if err != nil {
			return fmt.Errorf("fetch status changes: %w", err)
		}
		recs := make([]state.StatusChange, len(changes))
		for i, c := range changes {
			recs[i] = state.StatusChange{Email: c.Email, Status: c.Status, StatusMobile: c.StatusMobile,
				ListID: c.ListID, SubscriberID: c.SubscriberID, ChangedAt: c.DateUpdated}
		}
		added, err := rt.store.RecordStatusChanges(ctx, recs, targets)
		if err != nil {
			return err
		}
		read := len(recs)
		if rt.cfg.StatusPull.Reconcile {
			found, err := rt.reconcile(ctx, from, to)
			if err != nil {
				return err
			}
			n, err := rt.store.RecordReconciled(ctx, found, targets)
			if err != nil {
				return err
			}
			a.log.InfoContext(ctx, "reconciled the suppression list", slog.Int("found", len(found)), slog.Int("new", n))
			read += n
			added += n
		}
		delta := state.Counts{Read: int64(read), Duplicates: int64(read - added)}
		if err := rt.store.Checkpoint(ctx, state.Checkpoint{RunID: a.run.ID, Owner: a.owner, TTL: rt.cfg.LeaseTTL,
			Position: int64(read), Delta: delta}); err != nil {
			return err
		}
		rt.metrics.addCounts(KindStatusPull, "", delta)
		a.log.InfoContext(ctx, "status changes pulled", slog.Int("fetched", len(changes)), slog.Int("new", added))
		if err := rt.store.AdvanceStatusCursor(ctx, statusCursor, to); err != nil {
			return err
		}
		if wb == nil {
			return nil
		}
		target := rt.cfg.StatusPull.WriteBack.Kind
		written, werr := rt.writeBack(ctx, wb, target)
		if written > 0 {
			d := state.Counts{Sent: int64(written)}
			if err := rt.store.Checkpoint(ctx, state.Checkpoint{RunID: a.run.ID, Owner: a.owner, TTL: rt.cfg.LeaseTTL,
				Position: int64(read), Delta: d}); err != nil {
				return err
			}
			rt.metrics.addCounts(KindStatusPull, "", d)
			a.log.InfoContext(ctx, "status changes written back", slog.String("target", target), slog.Int("changes", written))
		}
		if werr != nil {
			if ctx.Err() != nil {
				return werr
			}
			a.warning = fmt.Sprintf("%s failed; %s: %v", rt.cfg.StatusPull.WriteBack, writeBackFailedNote, werr)
			a.log.WarnContext(ctx, "status write-back failed; retried on the next pull", slog.String("target", target), slog.Any("error", werr))
		}
		return nil
	})
}

// reconcile reads, for the list of every sync, the subscribers the service holds as
// unsubscribed or bounced, updated after from (everything when zero).
func (rt *Runtime) reconcile(ctx context.Context, from, now time.Time) ([]state.StatusChange, error) {
	var lists []int64
	for _, s := range rt.cfg.Syncs {
		if !slices.Contains(lists, s.ListID) {
			lists = append(lists, s.ListID)
		}
	}
	var out []state.StatusChange
	for _, list := range lists {
		for _, status := range []string{sink.StatusUnsubscribed, sink.StatusBounce} {
			for page := 1; ; page++ {
				recs, err := rt.sink.SubscribersByList(ctx, sink.ByListQuery{ListID: list, Page: page,
					PerPage: sink.MaxPerPage, Status: status, UpdatedAfter: from})
				if err != nil {
					return nil, fmt.Errorf("reconcile list %d (%s): %w", list, status, err)
				}
				for _, r := range recs {
					at, err := time.Parse(time.RFC3339Nano, r.DateUpdated)
					if err != nil {
						at = now
					}
					out = append(out, state.StatusChange{Email: r.Email, Status: status, ListID: list,
						SubscriberID: r.ID, ChangedAt: at.UTC()})
				}
				if len(recs) < sink.MaxPerPage {
					break
				}
			}
		}
	}
	return out, nil
}

// StatusOverview is where the status pull stands: what `subsync status` shows.
type StatusOverview struct {
	// Cursor is the time up to which changes were pulled; zero before the first pull.
	Cursor time.Time
	// WriteBack is the configured write-back (its String hides the DSN's password).
	WriteBack WriteBackSpec
	// Suppressed counts the suppression list by list and status.
	Suppressed []state.SuppressionCount
	// WriteBacks summarises every target that has or had write-backs, the configured one
	// first (even when it has none yet).
	WriteBacks []state.WriteBackSummary
	// Pending are the oldest pending write-backs of every target (at most PendingShown each).
	Pending []state.WriteBack
}

// PendingShown is how many pending write-backs per target StatusOverview lists.
const PendingShown = 100

// StatusOverview reads where the status pull stands from the state database.
func (rt *Runtime) StatusOverview(ctx context.Context) (StatusOverview, error) {
	o := StatusOverview{WriteBack: rt.cfg.StatusPull.WriteBack}
	var err error
	if o.Cursor, err = rt.store.StatusCursor(ctx, statusCursor); err != nil {
		return o, err
	}
	if o.Suppressed, err = rt.store.SuppressionCounts(ctx); err != nil {
		return o, err
	}
	sums, err := rt.store.WriteBackSummaries(ctx)
	if err != nil {
		return o, err
	}
	if k := o.WriteBack.Kind; k != "" {
		i := slices.IndexFunc(sums, func(s state.WriteBackSummary) bool { return s.Target == k })
		if i < 0 {
			sums = append(sums, state.WriteBackSummary{Target: k})
			i = len(sums) - 1
		}
		first := sums[i]
		sums = append([]state.WriteBackSummary{first}, slices.Delete(sums, i, i+1)...)
	}
	o.WriteBacks = sums
	for _, s := range sums {
		if s.Pending == 0 {
			continue
		}
		p, err := rt.store.PendingWriteBacks(ctx, s.Target, PendingShown)
		if err != nil {
			return o, err
		}
		o.Pending = append(o.Pending, p...)
	}
	return o, nil
}
