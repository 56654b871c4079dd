package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
				Message: erasedMessage}, nil)
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

// erasedMessage is the reason of an erased person's reject.
const erasedMessage = "the person was erased at their request (subsync forget) and is never sent again"

// scrubErased turns each reject or warning of the chunk that holds an erased person's address
// (in its value, another problem's or its row, written however: capitals, a trailing dot,
// in angle brackets, after mailto:) into the erased person's reject, which keeps no value and
// no row: mapping rejects such a row before suppress can tell whose it is, and its reject must
// not bring the address back into subsync's tables.
func (f *filter) scrubErased(ctx context.Context, c *chunk) error {
	if !slices.ContainsFunc(c.outcomes, func(o outcome) bool { return o.reject != nil }) {
		return nil
	}
	if err := f.refreshSuppressions(ctx); err != nil {
		return err
	}
	for i := range c.outcomes {
		o := &c.outcomes[i]
		if o.reject == nil || o.reject.Code == mapping.CodeErased || !f.mentionsErased(o.reject) {
			continue
		}
		if o.kind == outWarning {
			// A value dropped from a row that is sent (the address in another column): the
			// warning stays, without the value and the row.
			o.reject = &state.Reject{Ordinal: o.reject.Ordinal, Line: o.reject.Line, Sheet: o.reject.Sheet,
				Column: o.reject.Column, Code: o.reject.Code, Reason: o.reject.Reason}
			continue
		}
		o.reject = &state.Reject{Ordinal: o.reject.Ordinal, Line: o.reject.Line, Sheet: o.reject.Sheet,
			Code: mapping.CodeErased, Reason: erasedMessage}
	}
	return nil
}

// mentionsErased reports whether a reject's value, other problems' values or row hold an
// address of an erased person.
func (f *filter) mentionsErased(r *state.Reject) bool {
	values := []string{r.Value}
	for _, p := range r.More {
		values = append(values, p.Value)
	}
	if row, err := state.DecodeRow(r.Row); err == nil {
		values = append(values, row...)
	}
	for _, v := range values {
		if !strings.Contains(v, "@") {
			continue
		}
		for _, w := range strings.FieldsFunc(v, func(c rune) bool { return strings.ContainsRune(" \t\r\n,;<>\"'()[]", c) }) {
			w = strings.Trim(strings.TrimPrefix(strings.ToLower(w), "mailto:"), ".:")
			if strings.Contains(w, "@") && f.sup.Erased(state.EmailHash(w)) {
				return true
			}
		}
	}
	return false
}
