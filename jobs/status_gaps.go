package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/subsync/subsync/sink"
)

// gapCursor decides how far a pull that read the feed up to `to` may move its cursor when
// the read could not read some windows to their end (gaps, see sink.StatusGap): the cursor
// never passes changes that were not read, so it stops at the start of the earliest gap
// (zero: it may not move at all) — unless a reconciliation that began after the gap's end
// (reconciled) has since read every list for what the feed left out: such a gap is excused.
// It returns the position and the gaps that hold the cursor back.
func gapCursor(to time.Time, gaps []sink.StatusGap, reconciled time.Time) (time.Time, []sink.StatusGap) {
	pos := to
	var held []sink.StatusGap
	for _, g := range gaps {
		if !g.From.IsZero() && !g.To.IsZero() && !reconciled.Before(g.To) {
			continue
		}
		held = append(held, g)
		if g.From.Before(pos) {
			pos = g.From
		}
	}
	return pos, held
}

// feedGaps moves the status cursor as far as gapCursor allows and returns the error that
// fails the pull when a gap holds it back (nil when none does): the evidence, where the
// cursor stays, and what lets it move on. The changes read are recorded before, so a failing
// pull still suppresses everyone it did read.
func (rt *Runtime) feedGaps(ctx context.Context, a *attempt, to time.Time, gaps []sink.StatusGap) error {
	reconciled, err := rt.store.StatusCursor(ctx, reconcileCursor)
	if err != nil {
		return err
	}
	pos, held := gapCursor(to, gaps, reconciled)
	for _, g := range gaps {
		if len(held) == 0 || !containsGap(held, g) {
			a.log.InfoContext(ctx, "status feed gap covered by a reconciliation since", slog.String("gap", g.Reason))
		}
	}
	if !pos.IsZero() {
		if err := rt.store.AdvanceStatusCursor(ctx, statusCursor, pos); err != nil {
			return err
		}
	}
	if len(held) == 0 {
		return nil
	}
	reasons := make([]string, len(held))
	for i, g := range held {
		reasons[i] = g.Reason
		a.log.WarnContext(ctx, "status feed not read to its end", slog.String("gap", g.Reason))
	}
	where := "the cursor stays where it was"
	if !pos.IsZero() {
		where = "the cursor stays at " + pos.UTC().Format(time.RFC3339)
	}
	return permanent(fmt.Errorf("%s; %s, so no change is skipped; the changes read were recorded. "+
		"A reconciliation (status.reconcile_schedule, or subsync status reconcile) reads every list for what the "+
		"feed left out; once one has run after the end of that window, the next pull moves on",
		strings.Join(reasons, "; "), where))
}

func containsGap(gaps []sink.StatusGap, g sink.StatusGap) bool {
	for _, h := range gaps {
		if h.From.Equal(g.From) && h.To.Equal(g.To) {
			return true
		}
	}
	return false
}
