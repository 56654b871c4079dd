package state

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// Fingerprint is the last acknowledged payload of one subscriber, as three 8-byte hashes.
type Fingerprint struct {
	Email   uint64 // EmailHash of the e-mail
	Payload uint64 // the hash of what was sent (the payload and the status it was sent with)
	// Source is the hash of the source values the payload was mapped from (the caller's
	// choice; 0 = none): a row whose source values hash the same maps to the same payload,
	// so it can be found unchanged without mapping it.
	Source uint64
}

// FingerprintBuckets is how many buckets the fingerprints of one list are spread over (by
// the top bits of the e-mail hash). Each bucket is a few rows (its parts, see
// SaveFingerprints), each holding a sorted array of 24-byte entries, so a million
// fingerprints are 4096 buckets of about 6 KB: loading or saving them is one pass over 24 MB,
// not a million index updates.
const FingerprintBuckets = 4096

const fpEntrySize = 24

func bucketOf(email uint64) int { return int(email >> 52) } // top 12 bits: 0..4095

// NormaliseEmail is the form e-mails are compared in: trimmed and lower-cased, as the
// service matches them.
func NormaliseEmail(email string) string {
	email = strings.TrimSpace(email)
	for i := 0; i < len(email); i++ {
		if c := email[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(email)
		}
	}
	return email
}

// EmailHash is the hash of the normalised e-mail. Two e-mails that collide cost at most an
// unnecessary send: the payload hash covers the e-mail itself.
func EmailHash(email string) uint64 { return NormalisedEmailHash(NormaliseEmail(email)) }

// NormalisedEmailHash is EmailHash of an e-mail already normalised (NormaliseEmail), for a
// caller that keeps the normalised form too.
func NormalisedEmailHash(normalised string) uint64 {
	h := NewHasher()
	h.String(normalised)
	return h.Sum64()
}

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
}

// half is a table of loaded entries: in hash order, each at or after its home slot (the
// hash's bits below the top one, scaled to homes, about a third more than the entries), with
// empty slots (e-mail hash 0) in between and at least one after the last. An entry is found
// from its home slot on, over the smaller hashes there: a slot or two, mostly in the cache
// line of the home slot or the next, with nothing to read first.
type half struct {
	slots []Fingerprint
	homes uint64
	base  int // the Index of slots[0]
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
func (f *FingerprintSet) Lookup(email uint64) (Fingerprint, bool) {
	fp, _, ok := f.lookup(email)
	return fp, ok
}

// Index returns a number for an e-mail hash's entry below IndexBound, a different one for
// each entry loaded, for a caller that keeps a bit per loaded entry: a run notes there which
// addresses it read.
func (f *FingerprintSet) Index(email uint64) (int, bool) {
	_, i, ok := f.lookup(email)
	return i, ok
}

// IndexBound is what every Index is below.
func (f *FingerprintSet) IndexBound() int { return len(f.halves[0].slots) + len(f.halves[1].slots) + 1 }

func (f *FingerprintSet) lookup(email uint64) (Fingerprint, int, bool) {
	if email == 0 {
		return f.zero, f.IndexBound() - 1, f.hasZero
	}
	h := &f.halves[email>>63]
	if len(h.slots) == 0 {
		return Fingerprint{}, 0, false
	}
	return h.find(email, h.home(email))
}

// LookupBatch looks up many e-mail hashes at once: for each emails[i] it sets fps[i] and
// found[i] as Lookup would, and idx[i] as Index would unless idx is nil (each at least as
// long as emails). It first touches each e-mail's home slot and the cache line after it, with
// no branch on what it reads, so the memory loads of many lookups are in flight together;
// the lookups then find their entries in the cache. For a large set this is several times
// faster than one Lookup after the other.
func (f *FingerprintSet) LookupBatch(emails []uint64, fps []Fingerprint, found []bool, idx []int32) {
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
			} else {
				fps[k], at, found[k] = f.lookup(e)
			}
			if idx != nil {
				idx[k] = int32(at)
			}
		}
	}
}

// touchSink keeps LookupBatch's touches from being optimised away.
var touchSink atomic.Uint64

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

// LoadFingerprints reads the stored fingerprints of a list: its buckets, each part merged
// into the earlier ones and then the recent changes (see SaveFingerprints), the newer entry
// for an e-mail winning.
func (s *Store) LoadFingerprints(ctx context.Context, listID int64) (*FingerprintSet, error) {
	f := NewFingerprintSet(listID)
	// Two halves of the buckets are read and merged at once, on two connections: reading a
	// million fingerprints (24 MB) is CPU work in the driver, and nothing else runs yet. A
	// half is the buckets of the e-mail hashes of one sign, as the recent changes store them,
	// and goes into a table of its own (FingerprintSet.halves).
	builders := f.builders()
	errs := make(chan error, 2)
	for h := range 2 {
		go func() { errs <- s.loadBuckets(ctx, f.listID, &builders[h], h) }()
	}
	var err error
	for range 2 {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return nil, fmt.Errorf("load fingerprints of list %d: %w", listID, err)
	}
	if err := f.setHalves(&builders); err != nil {
		return nil, fmt.Errorf("load fingerprints of list %d: %w", listID, err)
	}
	return f, nil
}

// builders returns a builder for each of f's two tables, empty.
func (f *FingerprintSet) builders() [2]tableBuilder {
	f.halves = [2]half{}
	return [2]tableBuilder{{h: &f.halves[0]}, {h: &f.halves[1]}}
}

// halfBuckets is the buckets [lo, hi) of half h: those of the e-mail hashes whose top bit is h.
func halfBuckets(h int) (lo, hi int) {
	return h * FingerprintBuckets / 2, (h + 1) * FingerprintBuckets / 2
}

// setHalves completes the loaded set once both halves are placed.
func (f *FingerprintSet) setHalves(builders *[2]tableBuilder) error {
	f.n = 0
	for h := range builders {
		b := &builders[h]
		b.finish()
		f.n += b.n
		if b.hasZero {
			f.zero, f.hasZero = b.zero, true
		}
	}
	f.halves[1].base = len(f.halves[0].slots)
	if f.IndexBound() > math.MaxInt32 {
		return fmt.Errorf("%d fingerprints, at most about %d", f.n, math.MaxInt32/3*2)
	}
	return nil
}

// tableBuilder fills a half's table with the half's buckets, in order, as they are merged.
// The table is sized from the entries of the first buckets (hashes are uniform): the buckets
// are kept aside until sizeSample entries came, or the half ended.
type tableBuilder struct {
	h       *half
	early   []byte // the sorted entries of the first buckets, until the table is sized
	next    uint64 // the first slot after the entries placed
	buckets int    // buckets added
	n       int    // entries, the zero one included
	zero    Fingerprint
	hasZero bool
}

// sizeSample and sizeBuckets are how many entries, from at least how many buckets, size a
// half's table: the estimate of the half's entries from them is within about 2% (the table is
// sized 5% larger than the estimate needs). A short estimate costs the table's growth, a long
// one memory (hashes are uniform; a list crowded in its first buckets would have a table too
// large by up to the half's buckets ÷ sizeBuckets).
const (
	sizeSample  = 4096
	sizeBuckets = 64
)

// add adds the next bucket's entries (sorted, one per e-mail).
func (b *tableBuilder) add(entries []byte) {
	b.buckets++
	if len(entries) >= fpEntrySize && binary.LittleEndian.Uint64(entries) == 0 {
		// Hash 0 (the first bucket) marks an empty slot: its entry is kept apart.
		b.zero = Fingerprint{Payload: binary.LittleEndian.Uint64(entries[8:]), Source: binary.LittleEndian.Uint64(entries[16:])}
		b.hasZero = true
		b.n++
		entries = entries[fpEntrySize:]
	}
	if b.h.slots == nil {
		b.early = append(b.early, entries...)
		if len(b.early) >= sizeSample*fpEntrySize && b.buckets >= sizeBuckets {
			b.size(len(b.early) / fpEntrySize * (FingerprintBuckets / 2) / b.buckets)
		}
		return
	}
	b.place(entries)
}

// finish places what is left once every bucket of the half was added.
func (b *tableBuilder) finish() {
	if b.h.slots == nil && len(b.early) > 0 {
		b.size(len(b.early) / fpEntrySize)
	}
}

// size makes the table for about expect entries and places the entries kept aside.
func (b *tableBuilder) size(expect int) {
	b.h.homes = uint64(expect) + uint64(expect)/3 + uint64(expect)/20 + 16
	b.h.slots = make([]Fingerprint, b.h.homes+slotsTail)
	early := b.early
	b.early = nil
	b.place(early)
}

// place places sorted entries after those placed, each at its home slot or after the one
// before, keeping a slot empty after the last (the table grows when the estimate was short).
func (b *tableBuilder) place(entries []byte) {
	h := b.h
	for i := 0; i+fpEntrySize <= len(entries); i += fpEntrySize {
		e := Fingerprint{Email: binary.LittleEndian.Uint64(entries[i:]), Payload: binary.LittleEndian.Uint64(entries[i+8:]),
			Source: binary.LittleEndian.Uint64(entries[i+16:])}
		p := max(h.home(e.Email), b.next)
		if p+1 >= uint64(len(h.slots)) {
			h.slots = append(h.slots, make([]Fingerprint, len(h.slots)/8+slotsTail)...)
		}
		h.slots[p] = e
		b.next = p + 1
		b.n++
	}
}

// slotsTail is how many slots a half's table has past its homes, for the entries placed after
// the last home slot (a few).
const slotsTail = 64

// loadBuckets reads the stored parts and the recent changes of the buckets of half h of the
// list (halfBuckets: the e-mail hashes of one sign, as the recent changes store them) and
// adds each bucket, in order, to tb: its parts merged into one, then its recent changes
// merged in.
func (s *Store) loadBuckets(ctx context.Context, listID int64, tb *tableBuilder, h int) error {
	lo, hi := halfBuckets(h)
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	minEmail, maxEmail := int64(0), int64(math.MaxInt64)
	if h == 1 {
		minEmail, maxEmail = math.MinInt64, -1
	}
	rows, err := conn.QueryContext(ctx, `SELECT email, payload, source FROM subsync_fingerprint_recent
WHERE list_id = $1 AND email >= $2 AND email <= $3`, listID, minEmail, maxEmail)
	if err != nil {
		return err
	}
	recent, err := scanRecent(rows)
	if err != nil {
		return err
	}
	recent = radixSort(recent)
	if s.d == SQLite {
		// The parts are read through a memory map of the database file, not a read call and a
		// copy a page (about a quarter of the load's time); the connection goes back to the
		// pool as it was.
		if _, err := conn.ExecContext(ctx, "PRAGMA mmap_size = "+strconv.Itoa(loadMmapSize)); err != nil {
			return err
		}
		defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA mmap_size = 0") }()
	}
	rows, err = conn.QueryContext(ctx, `SELECT bucket, data FROM subsync_fingerprint
WHERE list_id = $1 AND bucket >= $2 AND bucket < $3 ORDER BY bucket, part`, listID, lo, hi)
	if err != nil {
		return err
	}
	defer rows.Close()
	// The parts of a bucket are gathered in buf (ends[i] is where part i ends), merged with
	// its recent changes once the next bucket starts, and added to the half's table.
	bucket, buf, ends := -1, []byte(nil), []int(nil) // bucket: the one whose parts are in buf
	next := lo                                       // the first bucket not yet added
	var merged, withRecent []byte
	addUpTo := func(end int) {
		for ; next < end; next++ {
			k := 0 // the bucket's recent changes: recent[:k]
			for k < len(recent) && bucketOf(recent[k].Email) == next {
				k++
			}
			var entries []byte
			if next == bucket {
				merged = mergeParts(merged[:0], buf, ends)
				entries = merged
			}
			if k > 0 {
				withRecent = mergeBucket(withRecent[:0], entries, recent[:k])
				entries, recent = withRecent, recent[k:]
			}
			tb.add(entries)
		}
		buf, ends = buf[:0], ends[:0]
	}
	for rows.Next() {
		var b int
		var data sql.RawBytes
		if err := rows.Scan(&b, &data); err != nil {
			return err
		}
		if b < lo || b >= hi || b < bucket || len(data)%fpEntrySize != 0 {
			return fmt.Errorf("bucket %d is malformed", b)
		}
		if b != bucket {
			addUpTo(b) // the buckets before b: bucket's parts (in buf), and those without any
			bucket = b
		}
		buf = append(buf, data...)
		ends = append(ends, len(buf))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	addUpTo(hi)
	return nil
}

// loadMmapSize is the most of an SQLite database a fingerprint load maps (PRAGMA mmap_size).
const loadMmapSize = 1 << 30

// querier is what recentFingerprints reads with: a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// recentFingerprints reads the recent changes of a list's fingerprints.
func recentFingerprints(ctx context.Context, q querier, listID int64) ([]Fingerprint, error) {
	rows, err := q.QueryContext(ctx, "SELECT email, payload, source FROM subsync_fingerprint_recent WHERE list_id = $1", listID)
	if err != nil {
		return nil, err
	}
	return scanRecent(rows)
}

// scanRecent reads rows of recent changes (email, payload, source), and closes them.
func scanRecent(rows *sql.Rows) ([]Fingerprint, error) {
	defer rows.Close()
	var out []Fingerprint
	for rows.Next() {
		var e, p, src int64
		if err := rows.Scan(&e, &p, &src); err != nil {
			return nil, err
		}
		out = append(out, Fingerprint{Email: uint64(e), Payload: uint64(p), Source: uint64(src)})
	}
	return out, rows.Err()
}

// recentMin is how many recent changes of a list's fingerprints are kept beside its buckets
// at least; the limit grows with the list (recentShare of its fingerprints).
const (
	recentMin   = 20_000
	recentShare = 16
)

// maxParts is how many parts a bucket may have; a save that would make more merges them into
// one.
const maxParts = 8

// SaveFingerprints writes the set's pending fingerprints in one transaction, and clears them.
//
// A list's stored fingerprints are its buckets, each in parts (rows of sorted entries, a
// later part's entry for an e-mail replacing an earlier one's), and its recent changes (a row
// a fingerprint, newer than every part). A few changes (a sync where 1% of the rows changed)
// are upserted into the recent changes: writing them costs what they are, where adding to the
// buckets they fall in would touch nearly all of them. More (an import, saving every
// FingerprintFlush rows) are written as a new part of each bucket they fall in, together with
// the recent changes, which are then cleared: a save writes what it saves, once, where
// merging it into the buckets rewrote everything saved before (saving a million rows in four
// parts wrote 60 MB, not 24). A bucket that would have more than maxParts parts has them
// merged into one by that save (reading them, so a concurrent run's entries are kept).
//
// It is not fenced by a lease: a fingerprint states what the service holds, whoever sent
// it. A fingerprint lost (a crash before the save) only makes the next sync send that row
// again.
func (s *Store) SaveFingerprints(ctx context.Context, f *FingerprintSet) error {
	return s.SaveFingerprintsStepped(ctx, f, nil)
}

// saveStepBuckets is how many buckets a step of SaveFingerprintsStepped writes: a sixteenth
// of the set, a few milliseconds on SQLite for an import's save of 250,000 fingerprints.
const saveStepBuckets = FingerprintBuckets / 16

// SaveFingerprintsStepped saves as SaveFingerprints does, except that a save that appends
// parts with no recent changes to fold in (an import's, or a first sync's, every
// FingerprintFlush rows) is written in steps of saveStepBuckets buckets, a transaction each,
// with a call of between (unless nil) after each step. A run writes its checkpoints there:
// a save of 250,000 fingerprints holds the database for about 70 ms on SQLite, and the
// window of batches in flight would wait for it all that time.
//
// between may Add fingerprints: those that fall in a bucket already written stay pending for
// the next save, the others are written by the steps still to come. A crash between steps
// loses the fingerprints of the buckets not yet written, as a crash before the save would.
func (s *Store) SaveFingerprintsStepped(ctx context.Context, f *FingerprintSet, between func()) error {
	if f.npending == 0 {
		return nil
	}
	stepped := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var recent int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_fingerprint_recent WHERE list_id = $1",
			f.listID).Scan(&recent); err != nil {
			return err
		}
		if recent+f.npending <= max(recentMin, f.n/recentShare) {
			return s.saveRecent(ctx, tx, f.listID, f.allPending())
		}
		if recent == 0 && between != nil {
			stepped = true
			return nil
		}
		var old []Fingerprint // the recent changes, older than the pending ones
		if recent > 0 {
			var err error
			if old, err = recentFingerprints(ctx, tx, f.listID); err != nil {
				return err
			}
			old = radixSort(old)
		}
		if err := saveParts(ctx, tx, s.d, f, old, 0, FingerprintBuckets); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM subsync_fingerprint_recent WHERE list_id = $1", f.listID)
		return err
	})
	if err != nil {
		return fmt.Errorf("save fingerprints of list %d: %w", f.listID, err)
	}
	if !stepped {
		f.clearPending(0, FingerprintBuckets)
		return nil
	}
	for from := 0; from < FingerprintBuckets; from += saveStepBuckets {
		to := from + saveStepBuckets
		if err := s.inTx(ctx, func(tx *sql.Tx) error { return saveParts(ctx, tx, s.d, f, nil, from, to) }); err != nil {
			return fmt.Errorf("save fingerprints of list %d (buckets %d to %d): %w", f.listID, from, to-1, err)
		}
		f.clearPending(from, to)
		between() // stepped only with a between
	}
	return nil
}

// saveRecent upserts sorted fingerprints (later duplicates winning) into the recent changes.
func (s *Store) saveRecent(ctx context.Context, tx *sql.Tx, listID int64, fps []Fingerprint) error {
	const cols = 4
	maxRows := s.d.bulkRows()
	args := make([]any, 0, maxRows*cols)
	for len(fps) > 0 {
		args = args[:0]
		n := 0
		for n < len(fps) && len(args) < maxRows*cols {
			if n+1 < len(fps) && fps[n+1].Email == fps[n].Email {
				n++ // a later entry for the same e-mail wins (one statement must not name it twice)
				continue
			}
			args = append(args, listID, int64(fps[n].Email), int64(fps[n].Payload), int64(fps[n].Source))
			n++
		}
		var b strings.Builder
		b.WriteString("INSERT INTO subsync_fingerprint_recent (list_id, email, payload, source) VALUES ")
		s.d.placeholders(&b, len(args)/cols, cols, 1)
		b.WriteString(" ON CONFLICT (list_id, email) DO UPDATE SET payload = excluded.payload, source = excluded.source")
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
		fps = fps[n:]
	}
	return nil
}

// saveParts writes, for the buckets [from, to), the recent changes old (sorted by e-mail
// hash, later duplicates winning; all in those buckets) and then the pending fingerprints of f
// as a new part of each bucket they fall in, one bucket at a time, partsPerInsert parts a
// statement; a bucket with maxParts parts has them merged with the new one into one.
func saveParts(ctx context.Context, tx *sql.Tx, d Dialect, f *FingerprintSet, old []Fingerprint, from, to int) error {
	type parts struct{ n, last int }
	have := make([]parts, FingerprintBuckets)
	rows, err := tx.QueryContext(ctx, `SELECT bucket, COUNT(*), MAX(part) FROM subsync_fingerprint
WHERE list_id = $1 AND bucket >= $2 AND bucket < $3 GROUP BY bucket`, f.listID, from, to)
	if err != nil {
		return err
	}
	for rows.Next() {
		var b int
		var p parts
		if err := rows.Scan(&b, &p.n, &p.last); err != nil {
			_ = rows.Close()
			return err
		}
		if b >= 0 && b < FingerprintBuckets {
			have[b] = p
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	const cols = 4
	var buf []byte // the parts of the next statement, one after the other
	var args []any // list, bucket, part and the end of the part's data in buf, a part at a time
	insert := func() error {
		if len(args) == 0 {
			return nil
		}
		start := 0
		for i := cols - 1; i < len(args); i += cols {
			end := args[i].(int)
			args[i] = buf[start:end]
			start = end
		}
		var b strings.Builder
		b.WriteString("INSERT INTO subsync_fingerprint (list_id, bucket, part, data) VALUES ")
		d.placeholders(&b, len(args)/cols, cols, 1)
		_, err := tx.ExecContext(ctx, b.String(), args...)
		buf, args = buf[:0], args[:0]
		return err
	}
	var part, merged []byte
	for bucket := from; bucket < to; bucket++ {
		end := 0
		for end < len(old) && bucketOf(old[end].Email) == bucket {
			end++
		}
		fresh := old[:end]
		old = old[end:]
		if len(fresh) == 0 && (f.pending == nil || len(f.pending[bucket]) == 0) {
			continue
		}
		merged = appendSorted(merged[:0], fresh)
		part = mergeBucket(part[:0], merged, f.sortedPending(bucket))
		p := have[bucket]
		if p.n == 0 {
			p.last = -1
		}
		if p.n+1 > maxParts {
			if part, err = foldParts(ctx, tx, f.listID, bucket, part); err != nil {
				return err
			}
			p.last = -1
		}
		buf = append(buf, part...)
		args = append(args, f.listID, bucket, p.last+1, len(buf))
		if len(args) == partsPerInsert*cols {
			if err := insert(); err != nil {
				return err
			}
		}
	}
	return insert()
}

// partsPerInsert is how many parts saveParts writes a statement.
const partsPerInsert = 64

// foldParts deletes the stored parts of a bucket and returns them merged, oldest first, with
// newest (sorted entries) last.
func foldParts(ctx context.Context, tx *sql.Tx, listID int64, bucket int, newest []byte) ([]byte, error) {
	rows, err := tx.QueryContext(ctx, "SELECT data FROM subsync_fingerprint WHERE list_id = $1 AND bucket = $2 ORDER BY part",
		listID, bucket)
	if err != nil {
		return nil, err
	}
	var acc []byte
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			_ = rows.Close()
			return nil, err
		}
		acc = mergeEntries(make([]byte, 0, len(acc)+len(data)), acc, data)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM subsync_fingerprint WHERE list_id = $1 AND bucket = $2", listID, bucket); err != nil {
		return nil, err
	}
	return mergeEntries(make([]byte, 0, len(acc)+len(newest)), acc, newest), nil
}

// appendSorted appends fps (sorted by e-mail, later duplicates winning) to dst as entries,
// one per e-mail.
func appendSorted(dst []byte, fps []Fingerprint) []byte {
	for k, fp := range fps {
		if k+1 < len(fps) && fps[k+1].Email == fp.Email {
			continue // a later entry for the same e-mail wins
		}
		dst = binary.LittleEndian.AppendUint64(dst, fp.Email)
		dst = binary.LittleEndian.AppendUint64(dst, fp.Payload)
		dst = binary.LittleEndian.AppendUint64(dst, fp.Source)
	}
	return dst
}

// mergeParts appends to dst the union of a bucket's parts, held one after the other in buf
// (ends[i] is where part i ends; each part sorted, one entry per e-mail), a later part's
// entry for an e-mail replacing an earlier one's.
func mergeParts(dst, buf []byte, ends []int) []byte {
	if len(ends) == 1 {
		return append(dst, buf...)
	}
	var heads [maxParts + 1]int // the next entry of each part (a bucket has at most maxParts)
	if len(ends) > len(heads) {
		acc := buf[:ends[0]]
		for i := 1; i < len(ends); i++ {
			acc = mergeEntries(nil, acc, buf[ends[i-1]:ends[i]])
		}
		return append(dst, acc...)
	}
	for i := 1; i < len(ends); i++ {
		heads[i] = ends[i-1]
	}
	for {
		best, bk := -1, uint64(0)
		for p, end := range ends {
			if heads[p] >= end {
				continue
			}
			k := binary.LittleEndian.Uint64(buf[heads[p]:])
			switch {
			case best < 0 || k < bk:
				best, bk = p, k
			case k == bk: // the later part's entry wins
				heads[best] += fpEntrySize
				best = p
			}
		}
		if best < 0 {
			return dst
		}
		dst = append(dst, buf[heads[best]:heads[best]+fpEntrySize]...)
		heads[best] += fpEntrySize
	}
}

// mergeEntries appends to dst the union of older and newer (sorted entries, one per e-mail
// each), newer's entry replacing older's for the same e-mail.
func mergeEntries(dst, older, newer []byte) []byte {
	i, j := 0, 0
	for i < len(older) && j < len(newer) {
		a, b := binary.LittleEndian.Uint64(older[i:]), binary.LittleEndian.Uint64(newer[j:])
		switch {
		case a < b:
			dst = append(dst, older[i:i+fpEntrySize]...)
			i += fpEntrySize
		case a > b:
			dst = append(dst, newer[j:j+fpEntrySize]...)
			j += fpEntrySize
		default:
			dst = append(dst, newer[j:j+fpEntrySize]...)
			i += fpEntrySize
			j += fpEntrySize
		}
	}
	dst = append(dst, older[i:]...)
	return append(dst, newer[j:]...)
}

// radixSort sorts fps by e-mail hash, stably, in four passes over 16-bit digits.
func radixSort(fps []Fingerprint) []Fingerprint {
	if len(fps) < 256 {
		slices.SortStableFunc(fps, func(a, b Fingerprint) int { return cmp.Compare(a.Email, b.Email) })
		return fps
	}
	src, dst := fps, make([]Fingerprint, len(fps))
	var count [1 << 16]int
	for shift := uint(0); shift < 64; shift += 16 {
		clear(count[:])
		for _, f := range src {
			count[(f.Email>>shift)&0xffff]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, f := range src {
			d := (f.Email >> shift) & 0xffff
			dst[count[d]] = f
			count[d]++
		}
		src, dst = dst, src
	}
	return src // four passes: back in fps's array
}

// mergeBucket appends to dst the union of stored (sorted entries) and add (sorted by e-mail,
// later duplicates winning), an added entry replacing a stored one for the same e-mail.
func mergeBucket(dst, stored []byte, add []Fingerprint) []byte {
	entry := func(f Fingerprint) {
		dst = binary.LittleEndian.AppendUint64(dst, f.Email)
		dst = binary.LittleEndian.AppendUint64(dst, f.Payload)
		dst = binary.LittleEndian.AppendUint64(dst, f.Source)
	}
	i := 0
	for k := 0; k < len(add); k++ {
		a := add[k]
		if k+1 < len(add) && add[k+1].Email == a.Email {
			continue // a later entry for the same e-mail wins
		}
		for i+fpEntrySize <= len(stored) && binary.LittleEndian.Uint64(stored[i:]) < a.Email {
			dst = append(dst, stored[i:i+fpEntrySize]...)
			i += fpEntrySize
		}
		if i+fpEntrySize <= len(stored) && binary.LittleEndian.Uint64(stored[i:]) == a.Email {
			i += fpEntrySize
		}
		entry(a)
	}
	return append(dst, stored[i:]...)
}

// HasFingerprints reports whether any fingerprint is recorded for the list.
func (s *Store) HasFingerprints(ctx context.Context, listID int64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM subsync_fingerprint WHERE list_id = $1
UNION ALL SELECT 1 FROM subsync_fingerprint_recent WHERE list_id = $1 LIMIT 1) AS t`, listID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check fingerprints of list %d: %w", listID, err)
	}
	return n > 0, nil
}

// ForgetFingerprints deletes the fingerprints of a list, so the next sync sends every row.
func (s *Store) ForgetFingerprints(ctx context.Context, listID int64) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, table := range []string{"subsync_fingerprint", "subsync_fingerprint_recent"} {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE list_id = $1", listID); err != nil {
				return fmt.Errorf("forget fingerprints of list %d: %w", listID, err)
			}
		}
		return nil
	})
}

// FingerprintCount is about how many fingerprints the list has (its buckets' entries plus its
// recent changes, some of which replace a bucket's entry), without loading them.
func (s *Store) FingerprintCount(ctx context.Context, listID int64) (int64, error) {
	var bytes, recent int64
	err := s.db.QueryRowContext(ctx, `SELECT
    (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM subsync_fingerprint WHERE list_id = $1),
    (SELECT COUNT(*) FROM subsync_fingerprint_recent WHERE list_id = $1)`, listID).Scan(&bytes, &recent)
	if err != nil {
		return 0, fmt.Errorf("count fingerprints of list %d: %w", listID, err)
	}
	return bytes/fpEntrySize + recent, nil
}
