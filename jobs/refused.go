package jobs

import (
	"context"
	"fmt"

	"github.com/subsync/subsync/mapping"
)

// everyRowRefused fails a run (permanently) that sent nothing because the service refused
// every row it was sent: a run with 100% of its rows refused is not a success, whatever the
// reason (a list parameter the service does not read, a field form it does not take). The
// error carries the service's answer for most of the rows. nil when any row went through, or
// none was refused.
func (rt *Runtime) everyRowRefused(ctx context.Context, a *attempt) error {
	run, err := rt.store.Run(ctx, a.run.ID)
	if err != nil {
		return err
	}
	if run.Counts.Sent > 0 {
		return nil
	}
	n, reason, err := rt.store.RejectsWithCode(ctx, a.run.ID, mapping.CodeRefused)
	if err != nil || n == 0 {
		return err
	}
	return permanent(fmt.Errorf("the service refused every row it was sent (%d rows, none accepted): %s; "+
		"subsync runs %d --rejects FILE lists them", n, reason, a.run.ID))
}
