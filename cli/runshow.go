package cli

import (
	"context"
	"fmt"

	"github.com/subsync/subsync/state"
)

// shownRejects is how many of a run's rejected rows printRun lists.
const shownRejects = 10

// printRejects lists the first shownRejects rejected rows of a run, each problem of a row on
// a line of its own (a row with a bad phone, date and gender shows all three), and says how
// to get the rest.
func (a *app) printRejects(ctx context.Context, store *state.Store, r state.Run) error {
	if r.Counts.Rejected == 0 {
		return nil
	}
	rejects, err := store.RejectsPage(ctx, r.ID, 0, shownRejects)
	if err != nil || len(rejects) == 0 {
		return err
	}
	if _, err := fmt.Fprintf(a.stdout, "rejected rows (every problem of each; the first %d):\n", len(rejects)); err != nil {
		return err
	}
	for _, rej := range rejects {
		where := fmt.Sprintf("line %d", rej.Line)
		if rej.Sheet != "" {
			where = fmt.Sprintf("sheet %q row %d", rej.Sheet, rej.Line)
		}
		for _, p := range rej.Problems() {
			col := ""
			if p.Column != "" {
				col = fmt.Sprintf(" column %q", p.Column)
				if p.Value != "" {
					col += fmt.Sprintf(" %q", p.Value)
				}
			}
			if _, err := fmt.Fprintf(a.stdout, "  %s%s: %s: %s\n", where, col, p.Code, p.Reason); err != nil {
				return err
			}
		}
	}
	if more := r.Counts.Rejected - int64(len(rejects)); more > 0 {
		_, err = fmt.Fprintf(a.stdout, "  … %d more rejected: subsync runs %d --rejects FILE lists every one\n", more, r.ID)
	}
	return err
}
