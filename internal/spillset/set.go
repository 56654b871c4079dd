// Package spillset is a set of 64-bit hashes (a run's e-mail addresses) whose memory is
// bounded by a budget: beyond it the set spills to a temporary file and stays exact.
//
// A Set holds its hashes in memory, in 64 open-addressing tables split by a hash's top 6
// bits (8 bytes a slot, at most 3/4 full), until adding one would take the tables past
// their share of the budget (2/3). It then sorts them (each table in place: the tables hold
// disjoint ranges of hashes, so the tables in order make one sorted run), appends them to
// its temporary file as a sorted run of 8 bytes a hash, adds them to a fixed-size Bloom
// filter (the other third of the budget) and empties the tables, keeping their slots.
//
// Add looks a hash up in the tables; when it is not there and the filter says it may have
// been spilled, in each run on disk: an index held in memory (the first hash of each 4 KiB
// page, 1/512 of the file; its bytes come out of the tables' share) names the one page
// that can hold it, read with one pread and searched. The answer is exact. Nine runs are
// merged into one, so a lookup reads at most nine pages.
//
// The file is created when the set first spills, in the directory given, and removed at
// once (it lives on as long as the set holds it open): a process that dies leaves nothing
// behind. Where it cannot be removed while open it is removed by Close.
package spillset

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

const (
	segments = 64
	// MinBudget is the smallest budget a Set takes (a smaller one is raised to it).
	MinBudget = 16 << 10
	// firstSlots is the size of a table when it is first used.
	firstSlots = 64
)

// Set is a set of 64-bit hashes. The zero value is not usable: see New. A Set is not safe
// for concurrent use.
type Set struct {
	budget  int64 // 0: unbounded, never spills
	dir     string
	segs    [segments]segment
	slots   int   // slots in all tables
	segCap  int   // the largest a table may grow to
	n       int64 // hashes in memory (zero included)
	hasZero bool
	filter  *filter // from the first spill on
	disk    *disk   // from the first spill on
	err     error   // the first failure to spill or read back: the set is no longer usable
	stats   Stats
}

type segment struct {
	keys []uint64 // 0 marks a free slot
	n    int
}

// Stats tell what a Set did.
type Stats struct {
	Len        int64 // distinct hashes added
	Spilled    int64 // of them on disk
	Spills     int   // runs written
	Merges     int   // merges of runs into one
	Runs       int   // runs on disk now
	Probes     int64 // lookups of a hash not in memory once the set has spilled
	Maybes     int64 // of them, hashes not on disk that the filter sent there (false positives)
	Found      int64 // lookups found on disk (a duplicate of a spilled hash)
	PageReads  int64 // pages read to look hashes up
	Bytes      int64 // memory held now: table slots, filter and page index
	PeakBytes  int64 // the most Bytes ever was, counting a table's old and new slots while it grows
	FileBytes  int64 // the temporary file's size
	FilterBits int64
}

// New returns an empty Set that holds at most budget bytes in memory (0: unbounded; else
// at least MinBudget), spilling beyond it to a temporary file in dir ("": os.TempDir()).
func New(budget int64, dir string) *Set {
	s := &Set{budget: budget, dir: dir, segCap: math.MaxInt}
	if budget > 0 {
		s.budget = max(budget, MinBudget)
		s.setCap()
	}
	return s
}

// filterBytes is the filter's share of the budget.
func (s *Set) filterBytes() int64 { return s.budget / 3 / blockBytes * blockBytes }

// setCap sets how large a table may grow: all 64 at their largest, and one more of that
// size (a table growing holds its old and its new slots), take what the filter and the page
// index leave of the budget.
func (s *Set) setCap() {
	left := s.budget - s.filterBytes()
	if s.disk != nil {
		left -= s.disk.indexBytes()
	}
	s.segCap = max(16, int(left/8/(segments+1)))
}

// Len is how many distinct hashes the set holds.
func (s *Set) Len() int64 { return s.stats.Len }

// Stats returns what the set did and holds.
func (s *Set) Stats() Stats {
	st := s.stats
	st.Bytes = s.bytes()
	if s.disk != nil {
		st.Runs = len(s.disk.runs)
		st.FileBytes = s.disk.size
	}
	if s.filter != nil {
		st.FilterBits = int64(len(s.filter.words)) * 32
	}
	return st
}

func (s *Set) bytes() int64 {
	b := int64(s.slots) * 8
	if s.filter != nil {
		b += int64(len(s.filter.words)) * 4
	}
	if s.disk != nil {
		b += s.disk.indexBytes()
	}
	return b
}

// Err returns the failure that made the set unusable, if any.
func (s *Set) Err() error { return s.err }

// Add adds k and reports whether it was not in the set. An error (writing or reading the
// temporary file) leaves the set unusable: every later Add returns it.
func (s *Set) Add(k uint64) (bool, error) {
	if s.err != nil {
		return false, s.err
	}
	if k == 0 {
		if s.hasZero {
			return false, nil
		}
		s.hasZero = true
		s.n++
		s.stats.Len++
		return true, nil
	}
	sg := &s.segs[k>>58]
	if sg.n > 0 {
		if _, ok := sg.find(k); ok {
			return false, nil
		}
	}
	if s.filter != nil {
		s.stats.Probes++
	}
	if s.filter != nil && s.filter.has(k) {
		found, err := s.disk.has(k, &s.stats.PageReads)
		if err != nil {
			s.err = fmt.Errorf("look up an e-mail hash in the spill file: %w", err)
			return false, s.err
		}
		if found {
			s.stats.Found++
			return false, nil
		}
		s.stats.Maybes++
	}
	if (sg.n+1)*4 > len(sg.keys)*3 {
		if err := s.makeRoom(sg); err != nil {
			return false, err
		}
	}
	i, _ := sg.find(k)
	sg.keys[i] = k
	sg.n++
	s.n++
	s.stats.Len++
	return true, nil
}

// makeRoom grows sg, or spills the set when sg is as large as the budget lets it be.
func (s *Set) makeRoom(sg *segment) error {
	if len(sg.keys) < s.segCap {
		s.grow(sg, min(max(firstSlots, 2*len(sg.keys)), s.segCap))
		return nil
	}
	if err := s.spill(); err != nil {
		s.err = err
		return err
	}
	if (sg.n+1)*4 > len(sg.keys)*3 { // its slots were given up to the page index
		s.grow(sg, min(max(firstSlots, 2*len(sg.keys)), s.segCap))
	}
	return nil
}

// grow moves sg's keys to a table of size slots.
func (s *Set) grow(sg *segment, size int) {
	old := sg.keys
	s.stats.PeakBytes = max(s.stats.PeakBytes, s.bytes()+int64(size)*8)
	sg.keys = make([]uint64, size)
	s.slots += size - len(old)
	for _, k := range old {
		if k != 0 {
			i, _ := sg.find(k)
			sg.keys[i] = k
		}
	}
}

// find returns k's slot, or the free slot where it goes. The home slot of k is its place in
// the table by value (within the table's range of hashes), so the keys lie in the table
// nearly in order.
func (sg *segment) find(k uint64) (int, bool) {
	size := uint64(len(sg.keys))
	i, _ := bits.Mul64(k<<6, size)
	for {
		switch sg.keys[i] {
		case k:
			return int(i), true
		case 0:
			return int(i), false
		}
		if i++; i == size {
			i = 0
		}
	}
}

// Touch reads what Add(k) will read first (k's slot in its table and, once the set has
// spilled, its block of the filter) and returns it, so that a caller about to add a batch
// of hashes can touch them all first: the reads of a batch then wait for memory together,
// where Add, called between other work, waits for each in turn (a table of a million
// hashes is larger than the processor's caches, so nearly every lookup is a miss).
func (s *Set) Touch(k uint64) uint64 {
	sg := &s.segs[k>>58]
	var w uint64
	if size := uint64(len(sg.keys)); size > 0 {
		i, _ := bits.Mul64(k<<6, size)
		w = sg.keys[i]
	}
	if s.filter != nil {
		w ^= uint64(s.filter.block(k)[0])
	}
	return w
}

// Close releases the temporary file. The set is empty and unusable after; Stats stay.
func (s *Set) Close() error {
	s.stats = s.Stats()
	s.segs = [segments]segment{}
	s.slots, s.n, s.filter = 0, 0, nil
	if s.err == nil {
		s.err = errClosed
	}
	if s.disk == nil {
		return nil
	}
	err := s.disk.close()
	s.disk = nil
	return err
}

// spill writes the tables' hashes (all but 0) to the file as a sorted run, adds them to the
// filter and empties the tables.
func (s *Set) spill() error {
	if s.disk == nil {
		d, err := newDisk(s.dir)
		if err != nil {
			return fmt.Errorf("spill the e-mail hashes beyond the memory budget (%d bytes) to %s: %w", s.budget, d.dir, err)
		}
		s.disk, s.filter = d, newFilter(s.filterBytes())
	}
	n := s.n
	if s.hasZero {
		n--
	}
	err := s.disk.add(n, func(yield func([]uint64) error) error {
		for i := range s.segs {
			sg := &s.segs[i]
			keys := sg.keys[:0]
			for _, k := range sg.keys {
				if k != 0 {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				s.filter.add(k)
			}
			if err := yield(keys); err != nil {
				return err
			}
			clear(sg.keys)
			s.n -= int64(sg.n)
			sg.n = 0
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("spill the e-mail hashes beyond the memory budget (%d bytes) to %s: %w", s.budget, s.disk.dir, err)
	}
	s.stats.Spills++
	s.stats.Spilled += n
	if len(s.disk.runs) == 1 && s.stats.Spills > 1 {
		s.stats.Merges++
	}
	s.setCap()
	for i := range s.segs {
		if sg := &s.segs[i]; len(sg.keys) > s.segCap { // the page index took some of their room
			s.slots -= len(sg.keys)
			sg.keys = nil
		}
	}
	s.stats.PeakBytes = max(s.stats.PeakBytes, s.bytes())
	return nil
}
