package jobs

import (
	"context"
	"errors"
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

// reconcileCursor names the cursor of the reconciliation in state.
const reconcileCursor = "reconcile"

// MinStatusOverlap is the least overlap a status pull keeps, whatever StatusPullSpec.Overlap
// says: the feed's dates may be read as whole days (see sink.Client.ReadStatusFeed), and
// reading a change twice costs nothing (the change log drops repeats).
const MinStatusOverlap = 24 * time.Hour

// StatusPullArgs are the arguments of a status pull job.
type StatusPullArgs struct {
	// Reconcile makes the job a reconciliation instead of a pull of the feed: it reads every
	// sync's list (GET /subscribers/by_list) for unsubscribed and bounced subscribers, and
	// records those the suppression list lacks.
	Reconcile bool `json:"reconcile,omitempty"`
}

// Kind is the job kind.
func (StatusPullArgs) Kind() string { return KindStatusPull }

// InsertOpts keep at most one status pull, and one reconciliation, queued or running.
func (StatusPullArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}}
}

// EnqueueStatusPull queues a status pull now. If one is already queued or running, it
// returns that job's id with an error wrapping ErrAlreadyQueued.
func (rt *Runtime) EnqueueStatusPull(ctx context.Context) (int64, error) {
	return rt.enqueueStatus(ctx, StatusPullArgs{}, "status pull")
}

// EnqueueReconcile queues a reconciliation now (see StatusPullArgs.Reconcile). If one is
// already queued or running, it returns that job's id with an error wrapping ErrAlreadyQueued.
func (rt *Runtime) EnqueueReconcile(ctx context.Context) (int64, error) {
	return rt.enqueueStatus(ctx, StatusPullArgs{Reconcile: true}, "reconciliation")
}

func (rt *Runtime) enqueueStatus(ctx context.Context, args StatusPullArgs, what string) (int64, error) {
	res, err := rt.q.Insert(ctx, args, nil)
	if err != nil {
		return 0, fmt.Errorf("queue %s: %w", what, err)
	}
	if res.UniqueSkippedAsDuplicate {
		return res.Job.ID, fmt.Errorf("a %s is %w as job %d", what, ErrAlreadyQueued, res.Job.ID)
	}
	return res.Job.ID, nil
}

// StatusPullWorker works status pull jobs.
type StatusPullWorker struct {
	river.WorkerDefaults[StatusPullArgs]
	rt *Runtime
}

// Timeout bounds one status pull: ten minutes, or longer when the feed's read may take
// longer (sink.Config.StatusMaxTime, status.max_time).
func (w *StatusPullWorker) Timeout(*river.Job[StatusPullArgs]) time.Duration {
	return max(10*time.Minute, w.rt.cfg.Sink.WithDefaults().StatusMaxTime+2*time.Minute)
}

// Work runs one status pull (or, with Args.Reconcile, one reconciliation: see reconcileRun):
//
//  1. reads the status feed (sink.Client.ReadStatusFeed, every page) from the cursor minus
//     the overlap (at least MinStatusOverlap; nothing on the first pull: the service's
//     default window) to now. An answer subsync cannot read fails the pull at once: nothing
//     is recorded and the cursor stays;
//  2. with Reconcile, reads every sync's list for subscribers the service holds as
//     unsubscribed or bounced (updated since the same from);
//  3. records the changes not seen before (by e-mail, status, time and list) in the status
//     log and the suppression list, queuing each for write-back, in one transaction;
//  4. advances the cursor to the end of the window of step 1 — only now that the changes
//     are stored, and never past a part of the window the feed did not answer in full
//     (sink.StatusGap): such a gap fails the pull, after the write-back (see feedGaps);
//  5. writes every pending change back to the source (this pull's and any earlier one's that
//     failed), and marks them done.
//
// A failed write-back does not fail the pull (the suppression list is what protects people,
// and it is up to date): the run completes with the failure as its message, and the changes
// stay pending for the next pull. Pulling twice changes nothing the second time.
//
// The run's counts: read = changes fetched, duplicates = those already recorded before the
// run, sent = changes written back to the source. An attempt that reads again what an
// earlier attempt of the same run read counts it once.
func (w *StatusPullWorker) Work(ctx context.Context, job *river.Job[StatusPullArgs]) error {
	rt := w.rt
	if job.Args.Reconcile {
		return rt.work(ctx, job.JobRow, runDesc{kind: KindStatusPull, name: "reconcile"}, rt.reconcileRun)
	}
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
			from = cursor.Add(-max(rt.cfg.StatusPull.Overlap, MinStatusOverlap))
		}
		// Milliseconds: the precision of the service's times.
		to := time.Now().UTC().Truncate(time.Millisecond)
		feed, err := rt.sink.ReadStatusFeed(ctx, from, to)
		if err != nil {
			if errors.Is(err, sink.ErrStatusFeedShape) || errors.Is(err, sink.ErrStatusFeedLimit) {
				// Reading again gives the same answer: fail now; the next pull tries again.
				return permanent(fmt.Errorf("fetch status changes: %w", err))
			}
			return fmt.Errorf("fetch status changes: %w", err)
		}
		recs, err := statusRecords(feed.Changes)
		if err != nil {
			return err
		}
		added, err := rt.store.RecordStatusChanges(ctx, recs, targets)
		if err != nil {
			return err
		}
		read, requests := len(recs), feed.Requests
		if rt.cfg.StatusPull.Reconcile {
			n, reqs, err := rt.reconcileInPull(ctx, a, from, to, targets)
			requests += reqs
			if err != nil {
				return err
			}
			read += n
			added += n
		}
		delta := a.onceCounts(read, added)
		delta.Requests = int64(requests)
		if err := rt.store.Checkpoint(ctx, state.Checkpoint{RunID: a.run.ID, Owner: a.owner, TTL: rt.cfg.LeaseTTL,
			Position: a.run.Position + delta.Read, Delta: delta}); err != nil {
			return err
		}
		a.run.Position += delta.Read
		a.run.Counts.Read += delta.Read
		a.run.Counts.Duplicates += delta.Duplicates
		rt.metrics.addCounts(KindStatusPull, "", delta)
		a.log.InfoContext(ctx, "status changes pulled", slog.Int("fetched", len(feed.Changes)), slog.Int("new", added),
			slog.Int("requests", feed.Requests), slog.Int64("bytes", feed.Bytes))
		gapErr := rt.feedGaps(ctx, a, to, feed.Gaps)
		if gapErr != nil && !isPermanent(gapErr) {
			return gapErr
		}
		if wb != nil {
			if err := rt.writeBackPending(ctx, a, wb); err != nil {
				return err
			}
		}
		return gapErr
	})
}

// statusRecords are the feed's changes as the store records them. A change without an
// e-mail fails the pull for good: subsync records changes by e-mail.
func statusRecords(changes []sink.StatusChange) ([]state.StatusChange, error) {
	recs := make([]state.StatusChange, len(changes))
	for i, c := range changes {
		if c.Email == "" {
			return nil, permanent(fmt.Errorf("fetch status changes: the feed names subscriber %d without an e-mail; "+
				"subsync records changes by e-mail, so nothing of this answer was recorded", c.SubscriberID))
		}
		recs[i] = state.StatusChange{Email: c.Email, Status: c.Status, StatusMobile: c.StatusMobile,
			ListID: c.ListID, SubscriberID: c.SubscriberID, ChangedAt: c.DateUpdated}
	}
	return recs, nil
}

// reconcileInPull is step 2 of a pull with Reconcile: it records the people every sync's list
// holds as unsubscribed or bounced (updated since from), and returns how many were new and
// how many requests it made.
func (rt *Runtime) reconcileInPull(ctx context.Context, a *attempt, from, to time.Time, targets []string) (n, requests int, err error) {
	rec, err := rt.reconcile(ctx, from, to)
	if err != nil {
		return 0, rec.requests, err
	}
	n, err = rt.store.RecordReconciled(ctx, rec.found, targets)
	if err != nil {
		return 0, rec.requests, err
	}
	a.log.InfoContext(ctx, "reconciled the suppression list", slog.Int("found", len(rec.found)), slog.Int("new", n))
	a.warning = joinWarnings(a.warning, rec.warning)
	return n, rec.requests, nil
}

// onceCounts turns what this attempt read (read changes, added of them new) into the delta
// of the run's counts, so that a change an earlier attempt of the same run already read is
// counted once: the feed is read again from the same cursor on a retry, so this attempt's
// read covers the earlier's; its changes the earlier attempt recorded are not duplicates.
func (a *attempt) onceCounts(read, added int) state.Counts {
	prevRead := a.run.Counts.Read
	prevAdded := prevRead - a.run.Counts.Duplicates
	total := max(prevRead, int64(read))
	totalAdded := prevAdded + int64(added)
	return state.Counts{Read: total - prevRead, Duplicates: max(total-totalAdded, 0) - a.run.Counts.Duplicates}
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
	// Unmatched are the oldest write-backs of every target that matched nothing in the
	// source (at most PendingShown each).
	Unmatched []state.WriteBack
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
		if s.Pending > 0 {
			p, err := rt.store.PendingWriteBacks(ctx, s.Target, PendingShown)
			if err != nil {
				return o, err
			}
			o.Pending = append(o.Pending, p...)
		}
		if s.Unmatched > 0 {
			u, err := rt.store.UnmatchedWriteBacks(ctx, s.Target, PendingShown)
			if err != nil {
				return o, err
			}
			o.Unmatched = append(o.Unmatched, u...)
		}
	}
	return o, nil
}
