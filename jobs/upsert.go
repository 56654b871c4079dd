package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// KeptStatus returns the status a single create or update of email in a list must carry so
// as not to make the person active again: "unsubscribed" or "bounce" when subsync holds them
// as such (account-wide: a status is the person's, whichever list it was learnt in), ""
// otherwise. A list whose unsubscribed and bounced people were never read from the service
// is read first (learnList), as before any push into it; if it cannot be read, KeptStatus
// fails rather than let a create go blind (a service may revive a person on a create
// without a status).
func (rt *Runtime) KeptStatus(ctx context.Context, listID int64, email string) (string, error) {
	if rt.sinkErr != nil {
		return "", fmt.Errorf("subscriber service client: %w", rt.sinkErr)
	}
	if err := rt.refreshList(ctx, listID); err != nil {
		return "", err
	}
	sup, err := rt.store.Suppressed(ctx, listID, []string{email})
	if err != nil {
		return "", fmt.Errorf("read whether %s unsubscribed or bounced: %w", email, err)
	}
	for _, s := range sup {
		return s, nil
	}
	return "", nil
}

// refreshList brings the suppression list up to date with one list in the service before a
// single create: a list never read is learnt (learnList); otherwise its unsubscribed and
// bounced people updated since it was last read (learnt, or reconciled), less a day, are
// read and recorded as a reconciliation's finds are.
func (rt *Runtime) refreshList(ctx context.Context, listID int64) error {
	learnt, ok, err := rt.store.ListLearned(ctx, listID)
	if err != nil {
		return err
	}
	if !ok {
		_, err := rt.learnList(ctx, rt.log, listID, false)
		return err
	}
	cursor, err := rt.store.StatusCursor(ctx, reconcileCursor)
	if err != nil {
		return err
	}
	if cursor.After(learnt) {
		learnt = cursor
	}
	read, err := rt.readListSuppressions(ctx, listID, learnt.Add(-MinStatusOverlap), time.Now().UTC())
	if err != nil {
		return err
	}
	_, err = rt.store.RecordReconciled(ctx, read.found, rt.writeBackTargets())
	return err
}

// Reactivated records that a person asked for (an explicit --status active) was made active
// again in a list: their suppression there is lifted, as an active change from the status
// feed lifts it, and the change is queued for write-back. A suppression learnt in another
// list stays.
func (rt *Runtime) Reactivated(ctx context.Context, listID int64, email string, subscriberID int64) error {
	_, err := rt.store.RecordStatusChanges(ctx, []state.StatusChange{{Email: email, Status: sink.StatusActive,
		ListID: listID, SubscriberID: subscriberID, ChangedAt: time.Now().UTC()}}, rt.writeBackTargets())
	return err
}
