package state

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
)

// LoadFingerprints reads the stored fingerprints of a list: its buckets, each part merged
// into the earlier ones and then the recent changes (see SaveFingerprints), the newer entry
// for an e-mail winning. The set is in memory, however large.
func (s *Store) LoadFingerprints(ctx context.Context, listID int64) (*FingerprintSet, error) {
	return s.LoadFingerprintsWithin(ctx, listID, FingerprintLimits{})
}

// LoadFingerprintsWithin loads as LoadFingerprints does, within lim: a list whose tables
// would take more than lim.MemoryBudget (about 33 bytes a fingerprint) has them written to a
// temporary file in lim.TempDir as they are read, and looked up there (Spilled). The caller
// closes the set (Close) to release the file.
func (s *Store) LoadFingerprintsWithin(ctx context.Context, listID int64, lim FingerprintLimits) (*FingerprintSet, error) {
	f := NewFingerprintSet(listID)
	onFile := false
	if lim.MemoryBudget > 0 {
		n, err := s.FingerprintCount(ctx, listID)
		if err != nil {
			return nil, err
		}
		onFile = spillBytes(n) > lim.MemoryBudget
	}
	// Two halves of the buckets are read and merged at once, on two connections: reading a
	// million fingerprints (24 MB) is CPU work in the driver, and nothing else runs yet. A
	// half is the buckets of the e-mail hashes of one sign, as the recent changes store them,
	// and goes into a table of its own (FingerprintSet.halves).
	builders := f.builders()
	errs := make(chan error, 2)
	for h := range 2 {
		if onFile {
			builders[h].spillTo = cmp.Or(lim.TempDir, os.TempDir())
			builders[h].memSlots = max(0, (lim.MemoryBudget-spillOverhead)/2/fpEntrySize)
		}
		go func() { errs <- s.loadBuckets(ctx, f.listID, &builders[h], h) }()
	}
	var err error
	for range 2 {
		err = errors.Join(err, <-errs)
	}
	if err == nil {
		err = f.setHalves(&builders)
	}
	if err != nil {
		_ = f.Close()
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
		if err := b.finish(); err != nil {
			return err
		}
		f.n += b.n
		if b.hasZero {
			f.zero, f.hasZero = b.zero, true
		}
	}
	f.halves[1].base = f.halves[0].len()
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
	sized   bool
	next    uint64 // the first slot after the entries placed
	buckets int    // buckets added
	n       int    // entries, the zero one included
	zero    Fingerprint
	hasZero bool
	spillTo string // the folder of the table's file, for a table beyond the memory budget ("": in memory)
	// memSlots is how many of the first slots of a table beyond the memory budget are kept
	// in memory (its share of the budget); the others are on file.
	memSlots int64
	spill    *spill // the table's file, once sized
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
func (b *tableBuilder) add(entries []byte) error {
	b.buckets++
	if len(entries) >= fpEntrySize && binary.LittleEndian.Uint64(entries) == 0 {
		// Hash 0 (the first bucket) marks an empty slot: its entry is kept apart.
		b.zero = Fingerprint{Payload: binary.LittleEndian.Uint64(entries[8:]), Source: binary.LittleEndian.Uint64(entries[16:])}
		b.hasZero = true
		b.n++
		entries = entries[fpEntrySize:]
	}
	if !b.sized {
		b.early = append(b.early, entries...)
		if len(b.early) >= sizeSample*fpEntrySize && b.buckets >= sizeBuckets {
			return b.size(len(b.early) / fpEntrySize * (FingerprintBuckets / 2) / b.buckets)
		}
		return nil
	}
	return b.place(entries)
}

// finish places what is left once every bucket of the half was added.
func (b *tableBuilder) finish() error {
	if !b.sized && len(b.early) > 0 {
		if err := b.size(len(b.early) / fpEntrySize); err != nil {
			return err
		}
	}
	if s := b.spill; s != nil && s.w != nil {
		if err := s.finish(); err != nil {
			return err
		}
		b.h.size = s.length
	}
	return nil
}

// size makes the table for about expect entries, in memory or on file, and places the
// entries kept aside.
func (b *tableBuilder) size(expect int) error {
	b.sized = true
	b.h.homes = uint64(expect) + uint64(expect)/3 + uint64(expect)/20 + 16
	if b.spillTo != "" {
		mem := min(uint64(b.memSlots), b.h.homes)
		s, err := createSpill(b.spillTo, mem, b.h.homes+slotsTail)
		if err != nil {
			return err
		}
		b.spill, b.h.file, b.h.slots = s, s.file, make([]Fingerprint, mem)
	} else {
		b.h.slots = make([]Fingerprint, b.h.homes+slotsTail)
	}
	early := b.early
	b.early = nil
	return b.place(early)
}

// place places sorted entries after those placed, each at its home slot or after the one
// before, keeping a slot empty after the last (the table grows when the estimate was short).
func (b *tableBuilder) place(entries []byte) error {
	h := b.h
	if b.spill != nil {
		for i := 0; i+fpEntrySize <= len(entries); i += fpEntrySize {
			e := entries[i : i+fpEntrySize]
			p := max(h.home(binary.LittleEndian.Uint64(e)), b.next)
			if p < uint64(len(h.slots)) {
				h.slots[p] = Fingerprint{Email: binary.LittleEndian.Uint64(e), Payload: binary.LittleEndian.Uint64(e[8:]),
					Source: binary.LittleEndian.Uint64(e[16:])}
			} else if err := b.spill.put(p, e); err != nil {
				return err
			}
			b.next = p + 1
			b.n++
		}
		return nil
	}
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
	return nil
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
	if s.d == SQLite && tb.spillTo == "" {
		// The parts are read through a memory map of the database file, not a read call and a
		// copy a page (about a quarter of the load's time); the connection goes back to the
		// pool as it was. Not for a set beyond its memory budget: the pages mapped would
		// count in the process's memory.
		if _, err := conn.ExecContext(ctx, "PRAGMA mmap_size = "+strconv.Itoa(loadMmapSize)); err != nil {
			return err
		}
		defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA mmap_size = 0") }()
	}
	// A set beyond its memory budget reads its recent changes (up to a sixteenth of the
	// list) a few buckets at a time, with the parts of those buckets, not a half's at once.
	step := hi - lo
	if tb.spillTo != "" {
		step = recentStepBuckets
	}
	for from := lo; from < hi; from += step {
		if err := loadRange(ctx, conn, listID, tb, from, min(from+step, hi)); err != nil {
			return err
		}
	}
	return nil
}

// recentStepBuckets is how many buckets' recent changes a set beyond its memory budget reads
// at once, when loading or saving: a 64th of them (a list of 10 million fingerprints has up
// to 625,000, 15 MB; 240 KB a step).
const recentStepBuckets = FingerprintBuckets / 64

// loadRange adds the buckets [lo, hi) (of one half) to tb, in order: each bucket's parts
// merged into one, then its recent changes merged in.
func loadRange(ctx context.Context, conn *sql.Conn, listID int64, tb *tableBuilder, lo, hi int) error {
	recent, err := recentOfBuckets(ctx, conn, listID, lo, hi)
	if err != nil {
		return err
	}
	rows, err := conn.QueryContext(ctx, `SELECT bucket, data FROM subsync_fingerprint
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
	addUpTo := func(end int) error {
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
			if err := tb.add(entries); err != nil {
				return err
			}
		}
		buf, ends = buf[:0], ends[:0]
		return nil
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
			// The buckets before b: bucket's parts (in buf), and those without any.
			if err := addUpTo(b); err != nil {
				return err
			}
			bucket = b
		}
		buf = append(buf, data...)
		ends = append(ends, len(buf))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return addUpTo(hi)
}

// recentOfBuckets reads the recent changes of the buckets [lo, hi) of the list's
// fingerprints, all of one half (their e-mail hashes, stored as signed integers, of one sign),
// sorted by e-mail hash.
func recentOfBuckets(ctx context.Context, q querier, listID int64, lo, hi int) ([]Fingerprint, error) {
	if lo < FingerprintBuckets/2 && hi > FingerprintBuckets/2 {
		return nil, fmt.Errorf("buckets %d to %d span both halves", lo, hi-1)
	}
	minEmail, maxEmail := int64(uint64(lo)<<52), int64(uint64(hi)<<52-1)
	rows, err := q.QueryContext(ctx, `SELECT email, payload, source FROM subsync_fingerprint_recent
WHERE list_id = $1 AND email >= $2 AND email <= $3`, listID, minEmail, maxEmail)
	if err != nil {
		return nil, err
	}
	recent, err := scanRecent(rows)
	if err != nil {
		return nil, err
	}
	return radixSort(recent), nil
}

// loadMmapSize is the most of an SQLite database a fingerprint load maps (PRAGMA mmap_size).
const loadMmapSize = 1 << 30

// querier is what recentOfBuckets reads with: a *sql.Conn or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
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
