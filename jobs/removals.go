package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/sink"
)

// What a sync does with people it delivered before who are absent from a complete read of
// its source, and with the old address of a key that came with a new one (SyncSpec.Removed).
const (
	// RemovedKeep leaves them as they are: such a sync unsubscribes nobody. The default.
	RemovedKeep = "keep"
	// RemovedUnsubscribe unsubscribes them (under the guard, MaxRemovals), after the
	// upserts, through bulkinsert's status=unsubscribed form. The service keeps one status
	// per subscriber, so the unsubscribe reaches every list the person is on.
	RemovedUnsubscribe = "unsubscribe"
)

// MaxRemovalsDefault is the default removal guard: a tenth of the sync's members.
const MaxRemovalsDefault = "10%"

// RemovalLimit is how many removals the guard spec ("500", or "10%" of members) allows.
func RemovalLimit(spec string, members int) (int, error) {
	spec = strings.TrimSpace(spec)
	if pct, ok := strings.CutSuffix(spec, "%"); ok {
		p, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || p < 0 || p > 100 || math.IsNaN(p) {
			return 0, errors.New(`want a count ("500") or a percentage of the sync's members ("10%")`)
		}
		return int(math.Floor(p / 100 * float64(members))), nil
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 0 {
		return 0, errors.New(`want a count ("500") or a percentage of the sync's members ("10%")`)
	}
	return n, nil
}

// RemovalsStoppedError is the failure of a sync whose removals the guard (max_removals)
// stopped: nobody was unsubscribed.
type RemovalsStoppedError struct {
	Sync    string
	Would   int    // how many would have been unsubscribed: Left and Moved
	Left    int    // people who left the source
	Moved   int    // old addresses of keys that came with a new one
	Limit   int    // what max_removals allows
	Spec    string // max_removals as configured
	Members int
}

func (e *RemovalsStoppedError) Error() string {
	return fmt.Sprintf("removals stopped: %d people would be unsubscribed (%d who left the source, %d old addresses of changed keys), "+
		"more than max_removals = %q allows (%d of the sync's %d members); nobody was unsubscribed. "+
		"If that is right, run `subsync sync %s --allow-removals`",
		e.Would, e.Left, e.Moved, e.Spec, e.Limit, e.Members, e.Sync)
}

// removalPlan is what a sync with a roster does once its rows are done.
type removalPlan struct {
	pipeline.Removals
	stopped *RemovalsStoppedError // the guard stops them all
	why     string                // why nobody absent is removed ("" when they are, or the sync keeps them)
	kept    int                   // old addresses of changed keys a sync that keeps people leaves as they are
}

// unsubscribe returns whom the plan unsubscribes: nobody when the guard stopped it.
func (rp removalPlan) unsubscribe() []string {
	if rp.stopped != nil {
		return nil
	}
	return append(slices.Clip(rp.Moved), rp.Absent...)
}

// planRemovals works out whom the run unsubscribes. A sync that keeps people (removed =
// "keep") unsubscribes nobody. One that removes them unsubscribes the old addresses of moved
// keys and, when the read was complete and not incremental, the absent members; both count
// against the guard (max_removals), which stops them all. Moved addresses the suppression
// list holds as unsubscribed or bounced leave the roster without a request, either way.
func (rt *Runtime) planRemovals(ctx context.Context, p *pipeline.Engine, s streamSpec) (removalPlan, error) {
	var rp removalPlan
	remove := s.removed == RemovedUnsubscribe
	absent := remove
	switch {
	case !absent:
	case s.source.Watermark != "":
		rp.why = "an incremental read (from the watermark) does not tell who left the source: nobody was removed"
		absent = false
	case !p.Complete():
		rp.why = p.Incomplete() + ": nobody was removed"
		absent = false
	}
	var err error
	if rp.Removals, err = p.Removals(ctx, rt.store, absent); err != nil {
		return rp, err
	}
	if !remove {
		// They stay on the roster, marked moved: a sync switched to removing people
		// unsubscribes them then, under its guard.
		rp.kept, rp.Moved = len(rp.Moved), nil
		return rp, nil
	}
	limit, err := RemovalLimit(s.maxRemovals, rp.Members)
	if err != nil {
		return rp, permanent(fmt.Errorf("max_removals: %w", err))
	}
	if would := len(rp.Absent) + len(rp.Moved); would > limit && !s.allowRemovals {
		rp.stopped = &RemovalsStoppedError{Sync: s.sync, Would: would, Left: len(rp.Absent), Moved: len(rp.Moved),
			Limit: limit, Spec: s.maxRemovals, Members: rp.Members}
	}
	return rp, nil
}

// remove unsubscribes, once a sync's rows are done, whom planRemovals says; the guard stops
// them all, failing the run.
func (rt *Runtime) remove(ctx context.Context, a *attempt, p *pipeline.Engine, s streamSpec) error {
	rp, err := rt.planRemovals(ctx, p, s)
	if err != nil {
		return err
	}
	if rp.why != "" {
		a.log.WarnContext(ctx, "removals skipped", slog.String("reason", rp.why))
		a.warning = strings.TrimPrefix(a.warning+"; "+rp.why, "; ")
	}
	if rp.kept > 0 {
		a.log.InfoContext(ctx, `old addresses of changed keys kept subscribed (removed = "keep")`, slog.Int("kept", rp.kept))
	}
	emails := rp.unsubscribe()
	if len(emails)+len(rp.Dropped) > 0 {
		n, err := p.Unsubscribe(sink.WithGate(ctx, a.leaseGate), rt.store, emails, rp.Dropped)
		if err != nil {
			return err
		}
		if len(emails) > 0 {
			a.log.InfoContext(ctx, "unsubscribed the old addresses of moved keys and the people who left the source",
				slog.Int("unsubscribed", n), slog.Int("moved", len(rp.Moved)), slog.Int("left", len(rp.Absent)),
				slog.Int("members", rp.Members))
		}
	}
	if rp.stopped != nil {
		return permanent(rp.stopped)
	}
	return nil
}
