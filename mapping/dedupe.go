package mapping

import (
	"cmp"
	"hash/maphash"

	"github.com/subsync/subsync/internal/hashtab"
)

// Deduper finds second rows for an e-mail address within one run, by the mapping's duplicate
// policy. It keeps an 8-byte hash per address, not the address: 11 to 21 bytes an address
// whatever its length, so ten million addresses take at most about 210 MB. Two addresses
// sharing a hash (a chance of about 1 in 2^64 per pair; about 1 in 370,000 for a whole run
// of ten million) would make the later one count as a duplicate.
//
// How each policy plays out in a streaming run:
//
//   - last (the default): a later duplicate is sent again. bulkinsert upserts by e-mail, and
//     a run sends its batches one after another and acknowledges them in order, so the later
//     row's values win, as if the earlier row had not been there. The row is counted as a
//     duplicate.
//   - first: a later duplicate is not sent, and counted.
//   - reject: a later duplicate is not sent, counted, and returned as a reject
//     (duplicate_email). The first row was already sent: in a stream it cannot be held back.
//
// A run resumed from a checkpoint starts with an empty Deduper unless the caller replays the
// addresses of the rows before the checkpoint with Observe.
// A Deduper is not safe for concurrent use.
type Deduper struct {
	policy string
	column string
	seed   maphash.Seed
	seen   hashtab.Map // the hashes of the addresses seen
	dups   int64
}

// NewDeduper returns a Deduper with the given policy (DuplicatesLast when "").
func NewDeduper(policy string) *Deduper {
	return &Deduper{policy: cmp.Or(policy, DuplicatesLast), seed: maphash.MakeSeed()}
}

// NewDeduper returns a Deduper with the mapping's policy, whose rejects name the e-mail column.
func (m *Mapper) NewDeduper() *Deduper {
	d := NewDeduper(m.duplicates)
	for _, o := range m.ops {
		if o.kind == kEmail {
			d.column = o.column
		}
	}
	return d
}

// Observe records an e-mail address (as mapped: trimmed and lower-cased) and reports whether
// it was seen before. It does not count duplicates.
func (d *Deduper) Observe(email string) (seen bool) {
	return !d.seen.Add(maphash.String(d.seed, email))
}

// Check decides about one mapped row: send reports whether to send it; rej is set when the
// policy is reject and the row is a duplicate.
func (d *Deduper) Check(row Row) (send bool, rej *Reject) {
	return d.Decide(row, d.Observe(row.Sub.Email))
}

// Decide is Check for a caller that keeps track of the addresses seen itself (a delta run
// notes the addresses it has fingerprints of in a bitmap): seen is whether the row's e-mail
// came before.
func (d *Deduper) Decide(row Row, seen bool) (send bool, rej *Reject) {
	if !seen {
		return true, nil
	}
	d.dups++
	switch d.policy {
	case DuplicatesFirst:
		return false, nil
	case DuplicatesReject:
		return false, &Reject{
			Ordinal: row.Ordinal,
			Line:    row.Line,
			Sheet:   row.Sheet,
			Column:  d.column,
			Value:   shorten(row.Sub.Email, maxRejectValue),
			Code:    CodeDuplicateEmail,
			Message: "the e-mail address is on an earlier row too",
		}
	}
	return true, nil
}

// Duplicates returns how many rows Check found to be duplicates.
func (d *Deduper) Duplicates() int64 { return d.dups }

// Len returns how many distinct addresses the Deduper has seen.
func (d *Deduper) Len() int { return d.seen.Len() }
