package mapping

import (
	"cmp"
	"fmt"
	"hash/maphash"

	"github.com/subsync/subsync/internal/spillset"
)

// Deduper finds second rows for an e-mail address within one run, by the mapping's duplicate
// policy. It keeps an 8-byte hash per address, not the address: 11 to 21 bytes an address
// whatever its length, so ten million addresses take at most about 210 MB, unless Bound
// limits its memory: it then spills the hashes beyond the budget to a temporary file and
// stays exact (see internal/spillset). Two addresses
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
	seen   *spillset.Set // the hashes of the addresses seen
	dups   int64
	// touched keeps what Prefetch read, so that the compiler keeps the reads.
	touched uint64
}

// NewDeduper returns a Deduper with the given policy (DuplicatesLast when ""), whose memory
// is not bounded.
func NewDeduper(policy string) *Deduper {
	return &Deduper{policy: cmp.Or(policy, DuplicatesLast), seed: maphash.MakeSeed(), seen: spillset.New(0, "")}
}

// Bound makes the Deduper hold at most budget bytes of hashes in memory (at least
// spillset.MinBudget), spilling those beyond to a temporary file in dir ("": os.TempDir()),
// and returns it. Call it before the first Observe or Check, and Close when done.
//
// A bounded Deduper can fail (the disk is full, the file cannot be read): Err then returns
// why, and the verdicts Observe and Check give from then on mean nothing. The caller must
// check Err before it acts on them.
func (d *Deduper) Bound(budget int64, dir string) *Deduper {
	d.seen = spillset.New(budget, dir)
	return d
}

// Err returns why a bounded Deduper failed, or nil.
func (d *Deduper) Err() error {
	if err := d.seen.Err(); err != nil {
		return fmt.Errorf("duplicate e-mails: %w", err)
	}
	return nil
}

// Close releases the Deduper's temporary file; it counts and Stats stay.
func (d *Deduper) Close() error {
	if err := d.seen.Close(); err != nil {
		return fmt.Errorf("duplicate e-mails: %w", err)
	}
	return nil
}

// Stats tell how the Deduper's set of hashes used its memory and its temporary file.
func (d *Deduper) Stats() spillset.Stats { return d.seen.Stats() }

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
// it was seen before. It does not count duplicates. A bounded Deduper that failed (Err)
// reports every address as seen.
func (d *Deduper) Observe(email string) (seen bool) {
	added, _ := d.seen.Add(maphash.String(d.seed, email))
	return !added
}

// Prefetch touches what Observe(email) will read (see spillset.Set.Touch): a caller about to
// observe a chunk's addresses prefetches them all first.
func (d *Deduper) Prefetch(email string) {
	d.touched ^= d.seen.Touch(maphash.String(d.seed, email))
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
func (d *Deduper) Len() int { return int(d.seen.Len()) }
