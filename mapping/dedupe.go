package mapping

import (
	"cmp"
	"hash/maphash"
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
	seen   hashSet
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
	return !d.seen.add(maphash.String(d.seed, email))
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
func (d *Deduper) Len() int { return d.seen.n }

// hashSet is a set of 64-bit hashes: hashShards tables by the hash's top bits, each with
// open addressing and linear probing, 8 bytes a slot, at most 3/4 full, so 11 to 21 bytes an
// address (a Go map takes about 38). Each table grows on its own, so growing holds the old and
// new slots of one table at a time, not of the whole set.
type hashSet struct {
	shards [hashShards]hashTable
	n      int
}

// hashShards is how many tables a hashSet is split into (by the top 6 bits of a hash).
const hashShards = 64

type hashTable struct {
	slots []uint64 // 0 marks a free slot; the hash 0 is stored as 1
	n     int
}

// add inserts h and reports whether it was not there yet.
func (s *hashSet) add(h uint64) bool {
	if h == 0 {
		h = 1
	}
	if !s.shards[h>>58].add(h) {
		return false
	}
	s.n++
	return true
}

// slots is how many slots the set's tables have in all.
func (s *hashSet) slots() int {
	n := 0
	for i := range s.shards {
		n += len(s.shards[i].slots)
	}
	return n
}

func (t *hashTable) add(h uint64) bool {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.slots[i] {
		case h:
			return false
		case 0:
			t.slots[i] = h
			t.n++
			return true
		}
	}
}

func (t *hashTable) grow() {
	old := t.slots
	t.slots = make([]uint64, max(64, 2*len(old)))
	mask := uint64(len(t.slots) - 1)
	for _, h := range old {
		if h == 0 {
			continue
		}
		i := h & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = h
	}
}
