package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/subsync/subsync/internal/runjson"
	"github.com/subsync/subsync/state"
)

// story is what `runs ID` tells of a run besides its counts (runjson.Story): the source
// columns it did not send, and whom a sync unsubscribed, by why.
type story struct{ runjson.Story }

// pairs are the story's lines of `runs ID`.
func (s story) pairs(r state.Run) []any {
	var out []any
	if len(s.Unplaced) > 0 {
		out = append(out, "columns not sent", strings.Join(quoteAll(s.Unplaced), ", ")+" (neither mapped nor ignored)")
	}
	if len(s.Ignored) > 0 {
		out = append(out, "columns ignored", strings.Join(quoteAll(s.Ignored), ", "))
	}
	if s.Removals != (state.RemovalCounts{}) {
		out = append(out, "unsubscribed", fmt.Sprintf("%d who left the source, %d old addresses of changed keys: subsync runs %d --removed lists them",
			s.Removals.Left, s.Removals.Moved, r.ID))
	}
	return out
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

type removedJSON struct {
	Email    string `json:"email"`
	Why      string `json:"why"`
	NewEmail string `json:"new_email,omitempty"`
}

// whyRemoved says why a sync unsubscribed someone, as runs ID --removed and the run page say it.
func whyRemoved(r state.Removed) string {
	if r.Moved {
		return "moved"
	}
	return "left"
}

// printRemoved lists whom a run unsubscribed (runs ID --removed): each address, why (left the
// source, or moved to a new address) and the new address of a moved one.
func (a *app) printRemoved(ctx context.Context, store *state.Store, r state.Run, asJSON bool) error {
	if asJSON {
		out := []removedJSON{}
		err := store.ScanRemoved(ctx, r.ID, 0, 0, func(rm state.Removed) error {
			out = append(out, removedJSON{Email: rm.Email, Why: whyRemoved(rm), NewEmail: rm.NewEmail})
			return nil
		})
		if err != nil {
			return err
		}
		return a.printJSON(out)
	}
	t := a.table("EMAIL", "WHY", "NEW ADDRESS")
	err := store.ScanRemoved(ctx, r.ID, 0, 0, func(rm state.Removed) error {
		why := "left the source"
		if rm.Moved {
			why = "moved to a new address"
		}
		t.row(rm.Email, why, rm.NewEmail)
		return nil
	})
	if err != nil {
		return err
	}
	return t.flush()
}
