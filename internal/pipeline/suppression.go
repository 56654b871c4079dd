package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// Suppression policies of a sync or an import: what happens to a row whose e-mail is on the
// suppression list (the person unsubscribed or bounced). Under either, such a row is never
// pushed as active, and it is counted as suppressed. These are the words of the
// configuration's suppression key, of subsync import --suppression and of the import job's
// arguments; CheckSuppression is their one check.
const (
	// SuppressionSkip leaves the row out of the push. The default.
	SuppressionSkip = "skip"
	// SuppressionUpdateKeepStatus pushes the row's data through bulkinsert's status form with
	// the suppressed status (status=unsubscribed or status=bounce, one batch per status), so
	// names and fields stay current and the service keeps the person unsubscribed or bounced.
	SuppressionUpdateKeepStatus = "update-keep-status"
)

// CheckSuppression returns an error saying which policies there are when policy is none of
// them; "" is the default, SuppressionSkip.
func CheckSuppression(policy string) error {
	switch policy {
	case "", SuppressionSkip, SuppressionUpdateKeepStatus:
		return nil
	}
	return fmt.Errorf("want %q or %q", SuppressionSkip, SuppressionUpdateKeepStatus)
}

// suppressionRecheck is how often a run reads the suppression list's version.
const suppressionRecheck = 100 * time.Millisecond

// suppress hashes the rows' e-mails and payloads, rejects the rows of erased people and marks
// the suppressed rows to skip, or gives them their suppressed status (update-keep-status).
func (f *filter) suppress(c *chunk) {
	checkSup := f.sup.Len() > 0
	seed := state.NewHasher() // the mapping's fingerprint, hashed once for the chunk
	seed.String(f.mappingFP)
	for i := range c.rows {
		r := &c.rows[i]
		c.emails[i] = state.EmailHash(r.Sub.Email)
		if f.sup.Erased(c.emails[i]) {
			// The reject keeps no value: the address must not come back into subsync's tables.
			c.reject(mapping.Reject{Ordinal: r.Ordinal, Line: r.Line, Sheet: r.Sheet, Code: mapping.CodeErased,
				Message: "the person was erased at their request (subsync forget) and is never sent again"}, nil)
			c.skip[i] = true
			continue
		}
		if checkSup {
			if st, ok := f.sup.Status(c.emails[i]); ok {
				c.outcomes = append(c.outcomes, newOutcome(r, outSuppressed, st, f.dryRun))
				if f.suppression != SuppressionUpdateKeepStatus {
					c.skip[i] = true
					continue
				}
				// Sent through the status form with the status the service holds, so it
				// stays unsubscribed or bounced while the data is updated. (Its source hash
				// no longer says what is sent: 0 never matches.)
				r.Status = st
				c.sources[i] = 0
			}
		}
		if f.track != nil {
			f.moveConsent(c, i)
		}
		c.payloads[i] = payloadHash(seed, r)
	}
}

// moveConsent sets the member flags of row i of a sync with a roster; a row whose key was
// another address's takes that address's suppressed status (unsubscribed or bounce), if any,
// and is sent with it: consent follows the person, who is never made active by a move.
func (f *filter) moveConsent(c *chunk, i int) {
	r := &c.rows[i]
	flags, from := f.track.member(c.emails[i], f.track.key(r))
	if flags&memberMoved != 0 && r.Status != sink.StatusUnsubscribed && r.Status != sink.StatusBounce {
		if st, ok := f.sup.Status(from); ok {
			r.Status = st
			c.sources[i] = 0
			flags |= memberCarry
			c.outcomes = append(c.outcomes, newOutcome(r, outSuppressed, st, f.dryRun))
		}
	}
	c.members[i] = flags
}

// refreshSuppressions re-reads the suppression list when its version changed (or on the first
// call). The version is read at most every suppressionRecheck.
func (f *filter) refreshSuppressions(ctx context.Context) error {
	if f.sup != nil && time.Since(f.supChecked) < suppressionRecheck {
		return nil
	}
	f.supChecked = time.Now()
	v, err := f.store.SuppressionVersion(ctx)
	if err != nil {
		return err
	}
	if f.sup != nil && f.sup.Version() == v {
		return nil
	}
	sup, err := f.store.LoadSuppressions(ctx, f.listID)
	if err != nil {
		return err
	}
	if f.sup != nil {
		f.log.InfoContext(ctx, "the suppression list changed during the run: checking the next rows against it",
			slog.Int("suppressed", sup.Len()))
	}
	f.sup = sup
	return nil
}
