package spillset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
)

const (
	pageKeys  = 512 // hashes in a page of a run
	pageBytes = pageKeys * 8
	maxRuns   = 8 // a ninth run is merged with them
	// filePattern names the temporary files (os.CreateTemp).
	filePattern = "subsync-spill-*"
)

var errClosed = errors.New("spill set closed")

// disk holds the sorted runs a Set spilled, in one temporary file.
type disk struct {
	dir  string
	f    *os.File
	name string // the file's name while it has one: removed by close
	size int64
	runs []run
	page []byte // a page read back
	buf  []byte // hashes on their way to the file
}

// run is a sorted run of hashes in the file.
type run struct {
	off    int64    // where it starts
	n      int64    // hashes
	fences []uint64 // the first hash of each page
	last   uint64
}

func newDisk(dir string) (*disk, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	d := &disk{dir: dir, page: make([]byte, pageBytes), buf: make([]byte, 0, 16*pageBytes)}
	var err error
	d.f, d.name, err = createFile(dir)
	return d, err
}

// createFile creates a temporary file in dir and removes its name at once; name is the
// file's name when that failed.
func createFile(dir string) (f *os.File, name string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("create the spill folder: %w", err)
	}
	f, err = os.CreateTemp(dir, filePattern)
	if err != nil {
		return nil, "", fmt.Errorf("create a spill file: %w", err)
	}
	if os.Remove(f.Name()) != nil {
		name = f.Name()
	}
	return f, name, nil
}

// indexBytes is the memory of the runs' page index.
func (d *disk) indexBytes() int64 {
	var n int64
	for _, r := range d.runs {
		n += int64(cap(r.fences)) * 8
	}
	return n
}

// runWriter writes a run of hashes, given in ascending order, at the end of a file.
type runWriter struct {
	f   *os.File
	buf []byte
	off int64 // where the buffer goes
	r   run
}

func newRunWriter(f *os.File, off, n int64, buf []byte) *runWriter {
	return &runWriter{f: f, buf: buf[:0], off: off,
		r: run{off: off, fences: make([]uint64, 0, (n+pageKeys-1)/pageKeys)}}
}

func (w *runWriter) write(keys []uint64) error {
	for _, k := range keys {
		if w.r.n%pageKeys == 0 {
			w.r.fences = append(w.r.fences, k)
		}
		w.r.n++
		w.r.last = k
		w.buf = binary.LittleEndian.AppendUint64(w.buf, k)
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *runWriter) flush() error {
	if _, err := w.f.WriteAt(w.buf, w.off); err != nil {
		return fmt.Errorf("write the spill file: %w", err)
	}
	w.off += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// has reports whether k is in one of the runs: a page read for each run whose range holds k.
func (d *disk) has(k uint64, reads *int64) (bool, error) {
	for i := range d.runs {
		r := &d.runs[i]
		if r.n == 0 || k < r.fences[0] || k > r.last {
			continue
		}
		p, found := slices.BinarySearch(r.fences, k)
		if found {
			return true, nil
		}
		p--
		n := min(pageKeys, r.n-int64(p)*pageKeys)
		b := d.page[:n*8]
		if _, err := d.f.ReadAt(b, r.off+int64(p)*pageBytes); err != nil {
			return false, fmt.Errorf("read the spill file: %w", err)
		}
		*reads++
		lo, hi := 0, int(n)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			switch v := binary.LittleEndian.Uint64(b[m*8:]); {
			case v == k:
				return true, nil
			case v < k:
				lo = m + 1
			default:
				hi = m
			}
		}
	}
	return false, nil
}

// add writes keys, sorted chunks handed over by each in ascending order, as a run at the
// end of the file; n is how many there are in all.
func (d *disk) add(n int64, each func(yield func([]uint64) error) error) error {
	w := newRunWriter(d.f, d.size, n, d.buf)
	if err := each(w.write); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	d.runs = append(d.runs, w.r)
	d.size = w.off
	if len(d.runs) > maxRuns {
		return d.merge()
	}
	return nil
}

// merge merges the runs into one, in a new file.
func (d *disk) merge() error {
	f, name, err := createFile(d.dir)
	if err != nil {
		return err
	}
	var n int64
	heads := make([]runReader, len(d.runs))
	for i, r := range d.runs {
		n += r.n
		heads[i] = runReader{f: d.f, r: r, mem: make([]byte, pageBytes)}
	}
	w := newRunWriter(f, 0, n, d.buf)
	err = mergeRuns(heads, w)
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		closeFile(f, name)
		return err
	}
	old, oldName := d.f, d.name
	d.f, d.name, d.size, d.runs = f, name, w.off, []run{w.r}
	return closeFile(old, oldName)
}

// mergeRuns writes the hashes of the runs in ascending order (no hash is in two runs).
func mergeRuns(heads []runReader, w *runWriter) error {
	for i := range heads {
		if err := heads[i].next(); err != nil {
			return err
		}
	}
	one := make([]uint64, 1)
	for {
		best := -1
		for i := range heads {
			if heads[i].ok && (best < 0 || heads[i].k < heads[best].k) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		one[0] = heads[best].k
		if err := w.write(one); err != nil {
			return err
		}
		if err := heads[best].next(); err != nil {
			return err
		}
	}
}

// runReader reads a run's hashes in order.
type runReader struct {
	f    *os.File
	r    run
	read int64  // hashes read from the file
	mem  []byte // a page
	buf  []byte // what is left of it
	k    uint64 // the current hash, when ok
	ok   bool
}

func (rr *runReader) next() error {
	if len(rr.buf) == 0 {
		n := min(pageKeys, rr.r.n-rr.read)
		if n == 0 {
			rr.ok = false
			return nil
		}
		rr.buf = rr.mem[:n*8]
		if _, err := rr.f.ReadAt(rr.buf, rr.r.off+rr.read*8); err != nil {
			return fmt.Errorf("read the spill file: %w", err)
		}
		rr.read += n
	}
	rr.k, rr.ok = binary.LittleEndian.Uint64(rr.buf), true
	rr.buf = rr.buf[8:]
	return nil
}

func (d *disk) close() error { return closeFile(d.f, d.name) }

func closeFile(f *os.File, name string) error {
	err := f.Close()
	if name != "" {
		if rerr := os.Remove(name); err == nil {
			err = rerr
		}
	}
	if err != nil {
		return fmt.Errorf("close the spill file: %w", err)
	}
	return nil
}
