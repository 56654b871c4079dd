package jobs

import (
	"context"
	"fmt"

	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/sink"
)

// readHeld reads every subscriber of the list in the service (GET /subscribers/by_list, every
// page), for a verifying run.
func (rt *Runtime) readHeld(ctx context.Context, listID int64) (*pipeline.Held, error) {
	held := pipeline.NewHeld()
	for page := 1; ; page++ {
		recs, err := rt.sink.SubscribersByList(ctx, sink.ByListQuery{ListID: listID, Page: page, PerPage: sink.MaxPerPage})
		if err != nil {
			return nil, fmt.Errorf("read list %d to verify it: %w", listID, err)
		}
		for _, r := range recs {
			held.Add(r)
		}
		if len(recs) < sink.MaxPerPage {
			return held, nil
		}
	}
}

// verifyNote is the difference a verifying run found, as its message (runs ID).
func verifyNote(h *pipeline.Held) string {
	return fmt.Sprintf("verified against the %d subscribers of the service's list: %d rows it lacked and %d it held with other values were sent",
		h.Len(), h.Missing(), h.Differing())
}
