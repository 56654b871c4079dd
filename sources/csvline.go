package sources

import (
	"bytes"
	"encoding/binary"
	"io"
	"sync/atomic"
	"unsafe"
)

// line is one physical line of a CSV file, without its terminator.
type line struct {
	text    []byte // stable: never written again (see lineReader), unless pushed back
	no      int    // 1-based physical line number
	tooLong bool   // the line was longer than the limit; text holds its start
}

// lineBlock is the size of the blocks a lineReader reads into (a longer line gets a block of
// its own size).
const lineBlock = 64 << 10

// lineReader yields the lines of a text stream with their numbers. Lines pushed back (after
// a quoted field that turned out to be unterminated) are yielded again first.
//
// It reads into blocks and hands out lines as parts of them, without copying: a block's
// bytes are never written again once read (a line cut by the end of a block is copied to the
// start of the next one), so a line's text, and strings viewing it (see stableString), stay
// valid for as long as they are kept, as copies would. A kept value keeps its block (64 KiB)
// alive.
type lineReader struct {
	r       io.Reader
	term    byte // '\n', or '\r' for a file with old Mac line ends
	no      int
	max     int
	pending []line
	back    bool // unread: backLine is the next line yielded
	backL   line
	buf     []byte // the current block: buf[off:end] is read and not yet yielded
	off     int
	end     int
	scan    int   // buf[off:scan] holds no terminator
	err     error // the first error of r (io.EOF at the end), once buf[off:end] is all there is
	noEnd   bool  // the last line was yielded, and it has no terminator
}

func newLineReader(r io.Reader, term byte, max int) *lineReader {
	return &lineReader{r: r, term: term, max: max}
}

// next returns the next line, or io.EOF after the last one.
func (lr *lineReader) next() (line, error) {
	if lr.back {
		lr.back = false
		return lr.backL, nil
	}
	if len(lr.pending) > 0 {
		l := lr.pending[0]
		lr.pending = lr.pending[1:]
		return l, nil
	}
	lr.scan = lr.off
	for {
		if k := bytes.IndexByte(lr.buf[lr.scan:lr.end], lr.term); k >= 0 {
			end := lr.scan + k + 1
			b := lr.buf[lr.off:end:end]
			lr.off = end
			lr.no++
			if len(b) > lr.max+2 { // a line end is not counted
				return line{text: b[:lr.max:lr.max], no: lr.no, tooLong: true}, nil
			}
			b = b[:len(b)-1]
			if n := len(b); lr.term == '\n' && n > 0 && b[n-1] == '\r' {
				b = b[: n-1 : n-1]
			}
			return line{text: b, no: lr.no}, nil
		}
		lr.scan = lr.end
		if lr.end-lr.off > lr.max+2 {
			return lr.skipLong(), nil
		}
		if lr.err != nil {
			if lr.err != io.EOF || lr.end == lr.off {
				return line{}, lr.err
			}
			b := lr.buf[lr.off:lr.end:lr.end] // the last line, without a terminator
			lr.off = lr.end
			lr.no++
			lr.noEnd = true
			return line{text: b, no: lr.no}, nil
		}
		lr.fill()
	}
}

// skipLong yields the start of a line longer than the limit, and reads past its end.
func (lr *lineReader) skipLong() line {
	lr.no++
	l := line{text: lr.buf[lr.off : lr.off+lr.max : lr.off+lr.max], no: lr.no, tooLong: true}
	lr.off, lr.scan = lr.end, lr.end
	for {
		if k := bytes.IndexByte(lr.buf[lr.scan:lr.end], lr.term); k >= 0 {
			lr.off = lr.scan + k + 1
			return l
		}
		lr.off, lr.scan = lr.end, lr.end // nothing of it is kept
		if lr.err != nil {
			return l
		}
		lr.fill()
	}
}

// fill reads more into the block, or into a new one (with the unread bytes moved to its
// start) when the block is full.
func (lr *lineReader) fill() {
	if lr.end == len(lr.buf) {
		n := lr.end - lr.off
		nb := make([]byte, max(lineBlock, 2*n))
		copy(nb, lr.buf[lr.off:lr.end])
		lr.scan -= lr.off
		lr.buf, lr.off, lr.end = nb, 0, n
	}
	n, err := lr.r.Read(lr.buf[lr.end:])
	lr.end += n
	if err != nil {
		lr.err = err
	}
}

// stableString views a line's text (or a part of it) as a string, without copying: the bytes
// are never written again (see lineReader).
func stableString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// unread makes l, the line just yielded, the next line yielded again.
func (lr *lineReader) unread(l line) { lr.back, lr.backL = true, l }

// pushBack makes ls (owned copies) the next lines yielded, in order.
func (lr *lineReader) pushBack(ls []line) {
	if len(ls) == 0 {
		return
	}
	lr.pending = append(append([]line(nil), ls...), lr.pending...)
}

// countingReader counts the bytes read through it, for Progress.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// asciiNoNUL reports whether b is all ASCII without a NUL byte, eight bytes at a time.
func asciiNoNUL(b []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		// The high bit of a byte is set if the byte is not ASCII, or (the classic
		// has-zero-byte test) if it is 0.
		if (w|(w-lo)&^w)&hi != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c == 0 || c >= 0x80 {
			return false
		}
	}
	return true
}
