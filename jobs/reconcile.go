package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/subsync/subsync/state"
)

// reconcileRun is one reconciliation: it reads, for every list subsync pushes into (each
// sync's, and each list an import or an upsert learnt, see learnList), the subscribers the
// service holds as unsubscribed or bounced, updated since the last reconciliation minus a
// day (everything the first time), and records those the suppression list lacks, queued for
// write-back (done by the next status pull, so that two write-backs never run at once).
// It is the safety net for a change the status feed never showed, on its own schedule
// (StatusPullSpec.ReconcileSchedule). Rows whose own status is not the one asked for are
// left out, and the run's message counts them.
func (rt *Runtime) reconcileRun(ctx context.Context, a *attempt) error {
	if rt.sinkErr != nil {
		return permanent(fmt.Errorf("subscriber service client: %w", rt.sinkErr))
	}
	cursor, err := rt.store.StatusCursor(ctx, reconcileCursor)
	if err != nil {
		return err
	}
	var from time.Time
	if !cursor.IsZero() {
		from = cursor.Add(-MinStatusOverlap)
	}
	to := time.Now().UTC().Truncate(time.Millisecond)
	rec, err := rt.reconcile(ctx, from, to)
	if err != nil {
		return err
	}
	n, err := rt.store.RecordReconciled(ctx, rec.found, rt.writeBackTargets())
	if err != nil {
		return err
	}
	delta := a.onceCounts(len(rec.found), n)
	delta.Requests = int64(rec.requests)
	if err := rt.store.Checkpoint(ctx, state.Checkpoint{RunID: a.run.ID, Owner: a.owner, TTL: rt.cfg.LeaseTTL,
		Position: a.run.Position + delta.Read, Delta: delta}); err != nil {
		return err
	}
	rt.metrics.addCounts(KindStatusPull, "", delta)
	a.log.InfoContext(ctx, "reconciled the suppression list", slog.Int("lists", rec.lists), slog.Int("found", len(rec.found)), slog.Int("new", n))
	if rec.warning != "" {
		a.log.WarnContext(ctx, "reconciliation", slog.String("warning", rec.warning))
		a.warning = joinWarnings(a.warning, rec.warning)
	}
	return rt.store.AdvanceStatusCursor(ctx, reconcileCursor, to)
}

// reconciled is what a reconciliation read.
type reconciled struct {
	found    []state.StatusChange
	lists    int
	requests int // pages read
	warning  string
}

// reconcile reads, for every list subsync pushes into (reconcileLists), the subscribers the
// service holds as unsubscribed or bounced, updated after from (everything when zero).
func (rt *Runtime) reconcile(ctx context.Context, from, now time.Time) (reconciled, error) {
	var out reconciled
	lists, err := rt.reconcileLists(ctx)
	if err != nil {
		return out, err
	}
	out.lists = len(lists)
	for _, list := range lists {
		r, err := rt.readListSuppressions(ctx, list, from, now)
		out.requests += r.requests
		if err != nil {
			return out, err
		}
		out.found = append(out.found, r.found...)
		out.warning = joinWarnings(out.warning, r.warning(list))
	}
	return out, nil
}

// reconcileLists are the lists of every sync, and every list whose suppressions were learnt
// before a first push into it, each once, in that order.
func (rt *Runtime) reconcileLists(ctx context.Context) ([]int64, error) {
	var lists []int64
	for _, s := range rt.cfg.Syncs {
		if !slices.Contains(lists, s.ListID) {
			lists = append(lists, s.ListID)
		}
	}
	learnt, err := rt.store.LearnedLists(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range learnt {
		if !slices.Contains(lists, id) {
			lists = append(lists, id)
		}
	}
	return lists, nil
}
