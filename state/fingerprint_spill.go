package state

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// FingerprintLimits bounds the memory of a loaded FingerprintSet (see LoadFingerprintsWithin).
type FingerprintLimits struct {
	// MemoryBudget is how many bytes the loaded tables may take in memory (0: no limit). A
	// list whose tables would take more keeps the first slots of each table in memory, as
	// many as the budget holds, and writes the others to a temporary file, in the same
	// layout, to be read from there (a read call a lookup that falls there).
	MemoryBudget int64
	// TempDir is the folder of that file ("": os.TempDir()), created if missing.
	TempDir string
}

// spillBytes is about what the tables of n fingerprints take: 24 bytes a slot, about a third
// more slots than entries (see tableBuilder.size).
func spillBytes(n int64) int64 { return n * fpEntrySize * 83 / 60 }

// spillOverhead is what a set beyond its memory budget holds besides the slots it keeps in
// memory, at most, while loading: the first buckets that size its tables, the write buffers,
// the recent changes of a step (see recentStepBuckets).
const spillOverhead = 1 << 20

// spillWindow is how many slots a lookup on file reads first: the entry is nearly always
// within the first two from its home slot. A lookup that must read on (hashes crowded in a
// few buckets) reads spillGrow times more each time, up to spillWindowMax.
const (
	spillWindow    = 8
	spillGrow      = 8
	spillWindowMax = 1024
)

// spill writes the slots of a half's table past those kept in memory to its file as they are
// placed, in hash order: the empty slots before an entry as zeros, then the entry.
type spill struct {
	dir     string
	file    *os.File
	w       *bufio.Writer
	written uint64 // the slots written, those in memory included
	length  uint64 // the table's slots: grown as the one in memory would be (see place)
}

// createSpill creates the temporary file of a half's table in dir, and removes its name at
// once: the set reads it through its descriptor, and its space is freed when the set is
// closed or the process ends, even by a crash, with nothing left behind in dir.
// The file holds the table's slots from mem on, of slots to begin with.
func createSpill(dir string, mem, slots uint64) (*spill, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	fail := func(err error) error {
		return fmt.Errorf("fingerprints beyond the memory budget: create a temporary file in %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fail(err)
	}
	file, err := os.CreateTemp(dir, "fingerprints-*.tmp")
	if err != nil {
		return nil, fail(err)
	}
	if err := os.Remove(file.Name()); err != nil {
		_ = file.Close()
		return nil, fail(err)
	}
	return &spill{dir: dir, file: file, w: bufio.NewWriterSize(file, 64<<10), written: mem, length: slots}, nil
}

// zeroSlots is a run of empty slots, written for the gaps between entries.
var zeroSlots [128 * fpEntrySize]byte

// put writes entry (24 bytes) at slot p, at or after the slots written (and those in memory).
func (s *spill) put(p uint64, entry []byte) error {
	if p+1 >= s.length {
		s.length += s.length/8 + slotsTail // as tableBuilder.place grows a table in memory
	}
	if err := s.zeros(p - s.written); err != nil {
		return err
	}
	if _, err := s.w.Write(entry); err != nil {
		return s.fail(err)
	}
	s.written = p + 1
	return nil
}

// zeros writes n empty slots.
func (s *spill) zeros(n uint64) error {
	for n > 0 {
		k := min(n, uint64(len(zeroSlots)/fpEntrySize))
		if _, err := s.w.Write(zeroSlots[:k*fpEntrySize]); err != nil {
			return s.fail(err)
		}
		n -= k
	}
	return nil
}

// finish writes the empty slots after the last entry, up to the table's length.
func (s *spill) finish() error {
	if err := s.zeros(s.length - s.written); err != nil {
		return err
	}
	if err := s.w.Flush(); err != nil {
		return s.fail(err)
	}
	s.written, s.w = s.length, nil
	return nil
}

func (s *spill) fail(err error) error {
	return fmt.Errorf("fingerprints beyond the memory budget: write their temporary file in %s: %w", s.dir, err)
}

// findOnFile is find for a table on file, from its slots in memory (h.slots, the first ones)
// when p is among them and on file past them, reading spillWindow slots first into buf (at
// least spillWindow entries long).
func (h *half) findOnFile(email, p uint64, buf []byte) (Fingerprint, int, bool, error) {
	s, mem := h.slots, uint64(len(h.slots))
	for p < mem && s[p].Email != 0 && s[p].Email < email {
		p++
	}
	if p < mem {
		if s[p].Email == email {
			return s[p], h.base + int(p), true, nil
		}
		return Fingerprint{}, 0, false, nil
	}
	window := uint64(spillWindow)
	for p < h.size {
		if uint64(len(buf)) < window*fpEntrySize {
			buf = make([]byte, window*fpEntrySize)
		}
		n := min(window, h.size-p)
		b := buf[:n*fpEntrySize]
		if _, err := h.file.ReadAt(b, int64(p-mem)*fpEntrySize); err != nil {
			return Fingerprint{}, 0, false, fmt.Errorf("read the fingerprints' temporary file: %w", err)
		}
		for i := range n {
			e := b[i*fpEntrySize:]
			switch k := binary.LittleEndian.Uint64(e); {
			case k == email:
				fp := Fingerprint{Email: k, Payload: binary.LittleEndian.Uint64(e[8:]), Source: binary.LittleEndian.Uint64(e[16:])}
				return fp, h.base + int(p+i), true, nil
			case k == 0 || k > email:
				return Fingerprint{}, 0, false, nil
			}
		}
		p += n
		window = min(window*spillGrow, spillWindowMax)
	}
	return Fingerprint{}, 0, false, nil
}

// lookupBatchOnFile is LookupBatch for a set whose tables are on file.
func (f *FingerprintSet) lookupBatchOnFile(emails []uint64, fps []Fingerprint, found []bool, idx []int32) error {
	var buf [spillWindow * fpEntrySize]byte
	for k, e := range emails {
		fp, at, ok, err := f.lookupWith(e, buf[:])
		if err != nil {
			return err
		}
		fps[k], found[k] = fp, ok
		if idx != nil {
			idx[k] = int32(at)
		}
	}
	return nil
}

// Spilled reports whether the set's tables are on a temporary file (see
// LoadFingerprintsWithin).
func (f *FingerprintSet) Spilled() bool { return f.halves[0].file != nil || f.halves[1].file != nil }

// Close releases the temporary file of a set loaded beyond its memory budget (a lookup that
// would read it fails after it). It does nothing for a set in memory, and may be called more than once, on nil
// too.
func (f *FingerprintSet) Close() error {
	if f == nil {
		return nil
	}
	f.closeOnce.Do(func() {
		for h := range f.halves {
			if file := f.halves[h].file; file != nil {
				f.closeErr = errors.Join(f.closeErr, file.Close())
			}
		}
	})
	return f.closeErr
}
