package state

import (
	"cmp"
	"math/bits"
	"os"
	"slices"
	"sync"
	"sync/atomic"
)

// FingerprintSet holds the delta fingerprints of one list in memory: those stored when it
// was loaded (for Lookup), and those added since (written by SaveFingerprints).
//
// Lookup only reads what was loaded, so it may run concurrently with Add and
// SaveFingerprints; Add and SaveFingerprints must not run concurrently with each other.
type FingerprintSet struct {
	listID int64
	// halves holds the loaded entries: halves[0] those whose e-mail hash's top bit is 0,
	// halves[1] the others, each in a table of its own (see half). The entry for the e-mail
	// hash 0, if any, is zero.
	halves   [2]half
	zero     Fingerprint
	hasZero  bool
	n        int
	pending  [][][]Fingerprint // per bucket: blocks of pendingBlock entries, in the order added
	npending int
	free     [][]Fingerprint // emptied blocks, for the next ones added
	scratch  []Fingerprint   // one bucket's entries, sorted, while saving

	closeOnce sync.Once // Close
	closeErr  error
}

// half is a table of loaded entries: in hash order, each at or after its home slot (the
// hash's bits below the top one, scaled to homes, about a third more than the entries), with
// empty slots (e-mail hash 0) in between and at least one after the last. An entry is found
// from its home slot on, over the smaller hashes there: a slot or two, mostly in the cache
// line of the home slot or the next, with nothing to read first.
//
// A table beyond the set's memory budget is on a temporary file instead, in the same layout
// (24 bytes a slot, little-endian), but for its first slots, as many as the budget holds,
// kept in slots.
type half struct {
	slots []Fingerprint
	homes uint64
	base  int      // the Index of slots[0]
	file  *os.File // the table's slots past those in slots, on file (nil: all in slots)
	size  uint64   // the table's slots, with a file
}

// len is how many slots the half's table has.
func (h *half) len() int {
	if h.file != nil {
		return int(h.size)
	}
	return len(h.slots)
}

// home is the slot of the half's table an e-mail hash's entry is at or after.
func (h *half) home(email uint64) uint64 {
	hi, _ := bits.Mul64(email<<1, h.homes)
	return hi
}

// find looks for an e-mail hash's entry (not 0) from slot p of the half's table on.
func (h *half) find(email, p uint64) (Fingerprint, int, bool) {
	s := h.slots
	for s[p].Email != 0 && s[p].Email < email {
		p++ // the slot after the last entry is empty
	}
	if s[p].Email == email {
		return s[p], h.base + int(p), true
	}
	return Fingerprint{}, 0, false
}

// pendingBlock is how many fingerprints a block of the pending ones holds (768 bytes). The
// pending fingerprints are kept by bucket in blocks, so that saving them sorts one bucket at a
// time in place of the whole set into a copy, and adding them never copies a large array: at
// most a partly filled block per bucket is unused.
const pendingBlock = 32

// NewFingerprintSet returns an empty set for the list, for a run that only records
// fingerprints (an import) and need not read the stored ones.
func NewFingerprintSet(listID int64) *FingerprintSet {
	return &FingerprintSet{listID: listID}
}

// ListID is the list the set belongs to.
func (f *FingerprintSet) ListID() int64 { return f.listID }

// Len is how many fingerprints were loaded.
func (f *FingerprintSet) Len() int { return f.n }

// Pending is how many fingerprints were added and not yet saved.
func (f *FingerprintSet) Pending() int { return f.npending }

// Lookup returns the fingerprint stored for an e-mail hash when the set was loaded.
//
// The loaded entries are kept in hash order in two tables (by the hash's top bit) about a
// third larger than their number, each entry at or after the slot its hash scales to: a
// lookup reads on from there over the smaller hashes, a slot or two, where a binary search
// over a million would miss on most probes.
//
// A set on file (Spilled) reads the slots from there: err is that read's failure.
func (f *FingerprintSet) Lookup(email uint64) (fp Fingerprint, ok bool, err error) {
	fp, _, ok, err = f.lookup(email)
	return fp, ok, err
}

// Index returns a number for an e-mail hash's entry below IndexBound, a different one for
// each entry loaded, for a caller that keeps a bit per loaded entry: a run notes there which
// addresses it read.
func (f *FingerprintSet) Index(email uint64) (i int, ok bool, err error) {
	_, i, ok, err = f.lookup(email)
	return i, ok, err
}

// IndexBound is what every Index is below.
func (f *FingerprintSet) IndexBound() int { return f.halves[0].len() + f.halves[1].len() + 1 }

func (f *FingerprintSet) lookup(email uint64) (Fingerprint, int, bool, error) {
	h := &f.halves[email>>63]
	if email != 0 && len(h.slots) > 0 && h.file == nil {
		fp, i, ok := h.find(email, h.home(email))
		return fp, i, ok, nil
	}
	var buf [spillWindow * fpEntrySize]byte
	return f.lookupWith(email, buf[:])
}

// lookupWith is lookup for an e-mail hash 0 or one whose table is not in memory, reading a
// table on file into buf (spillWindow entries).
func (f *FingerprintSet) lookupWith(email uint64, buf []byte) (Fingerprint, int, bool, error) {
	if email == 0 {
		return f.zero, f.IndexBound() - 1, f.hasZero, nil
	}
	h := &f.halves[email>>63]
	switch {
	case h.file != nil:
		return h.findOnFile(email, h.home(email), buf)
	case len(h.slots) > 0:
		fp, i, ok := h.find(email, h.home(email))
		return fp, i, ok, nil
	}
	return Fingerprint{}, 0, false, nil
}

// LookupBatch looks up many e-mail hashes at once: for each emails[i] it sets fps[i] and
// found[i] as Lookup would, and idx[i] as Index would unless idx is nil (each at least as
// long as emails). It first touches each e-mail's home slot and the cache line after it, with
// no branch on what it reads, so the memory loads of many lookups are in flight together;
// the lookups then find their entries in the cache. For a large set this is several times
// faster than one Lookup after the other.
//
// A set on file (Spilled) reads each entry from there, a read call a lookup: err is the first
// read that failed (the results are then incomplete).
func (f *FingerprintSet) LookupBatch(emails []uint64, fps []Fingerprint, found []bool, idx []int32) error {
	if f.Spilled() {
		return f.lookupBatchOnFile(emails, fps, found, idx)
	}
	const group = 256
	var home [group]uint64
	for start := 0; start < len(emails); start += group {
		es := emails[start:min(start+group, len(emails))]
		var sink uint64
		for i, e := range es {
			h := &f.halves[e>>63]
			if n := len(h.slots); n > 0 {
				p := h.home(e)
				home[i] = p
				sink += h.slots[p].Email + h.slots[min(p+2, uint64(n-1))].Email
			}
		}
		touchSink.Store(sink)
		for i, e := range es {
			k := start + i
			var at int
			if h := &f.halves[e>>63]; e != 0 && len(h.slots) > 0 {
				fps[k], at, found[k] = h.find(e, home[i])
			} else if e == 0 {
				fps[k], at, found[k] = f.zero, f.IndexBound()-1, f.hasZero
			} else {
				fps[k], at, found[k] = Fingerprint{}, 0, false
			}
			if idx != nil {
				idx[k] = int32(at)
			}
		}
	}
	return nil
}

// touchSink keeps LookupBatch's touches from being optimised away.
var touchSink atomic.Uint64

// AddBatch records fps as Add would, one after the other. It first touches the place each
// will go (its bucket's last block, where it is appended), with no branch on what it reads,
// so that the memory loads of a batch are in flight together: a run adds a checkpoint's
// thousand fingerprints at once, into 4,096 buckets whose last blocks are larger than the
// processor's nearer caches, and one Add after the other waited for each in turn.
func (f *FingerprintSet) AddBatch(fps []Fingerprint) {
	if f.pending != nil {
		var sink uint64
		for i := range fps {
			if blocks := f.pending[bucketOf(fps[i].Email)]; len(blocks) > 0 {
				blk := blocks[len(blocks)-1]
				sink += blk[:cap(blk)][min(len(blk), cap(blk)-1)].Email
			}
		}
		touchSink.Store(sink)
	}
	for _, fp := range fps {
		f.Add(fp)
	}
}

// Add records the fingerprint of an acknowledged row, to be written by SaveFingerprints.
// For an e-mail added twice, the later one wins.
func (f *FingerprintSet) Add(fp Fingerprint) {
	if f.pending == nil {
		f.pending = make([][][]Fingerprint, FingerprintBuckets)
	}
	b := bucketOf(fp.Email)
	blocks := f.pending[b]
	if len(blocks) == 0 || len(blocks[len(blocks)-1]) == pendingBlock {
		var blk []Fingerprint
		if n := len(f.free); n > 0 {
			blk, f.free = f.free[n-1], f.free[:n-1]
		} else {
			blk = make([]Fingerprint, 0, pendingBlock)
		}
		blocks = append(blocks, blk)
	}
	blocks[len(blocks)-1] = append(blocks[len(blocks)-1], fp)
	f.pending[b] = blocks
	f.npending++
}

// sortedPending returns the fingerprints pending in bucket b sorted by e-mail hash, the later
// of two for an e-mail last, in f.scratch (valid until the next call).
func (f *FingerprintSet) sortedPending(b int) []Fingerprint {
	f.scratch = f.scratch[:0]
	if f.pending != nil {
		for _, blk := range f.pending[b] {
			f.scratch = append(f.scratch, blk...)
		}
	}
	slices.SortFunc(f.scratch, byEmail)
	for i := 1; i < len(f.scratch); i++ {
		if f.scratch[i].Email == f.scratch[i-1].Email {
			// An e-mail added twice (rare): sort again, stably, from the order added.
			f.scratch = f.scratch[:0]
			for _, blk := range f.pending[b] {
				f.scratch = append(f.scratch, blk...)
			}
			slices.SortStableFunc(f.scratch, byEmail)
			break
		}
	}
	return f.scratch
}

// allPending returns every pending fingerprint sorted by e-mail hash, the later of two for an
// e-mail last (a few: the recent changes).
func (f *FingerprintSet) allPending() []Fingerprint {
	out := make([]Fingerprint, 0, f.npending)
	for b := range FingerprintBuckets {
		out = append(out, f.sortedPending(b)...)
	}
	return out
}

// clearPending forgets the pending fingerprints of buckets [from, to), keeping their blocks
// for the next ones.
func (f *FingerprintSet) clearPending(from, to int) {
	if f.pending == nil {
		return
	}
	for b := from; b < to; b++ {
		blocks := f.pending[b]
		for _, blk := range blocks {
			f.npending -= len(blk)
			f.free = append(f.free, blk[:0])
		}
		clear(blocks)
		f.pending[b] = blocks[:0]
	}
}

func byEmail(a, b Fingerprint) int { return cmp.Compare(a.Email, b.Email) }
