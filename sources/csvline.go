package sources

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"sync/atomic"
)

// line is one physical line of a CSV file, without its terminator.
type line struct {
	text    []byte // valid until the next read unless the line was pushed back
	no      int    // 1-based physical line number
	tooLong bool   // the line was longer than the limit; text holds its start
}

// lineReader yields the lines of a text stream with their numbers. Lines pushed back (after
// a quoted field that turned out to be unterminated) are yielded again first.
type lineReader struct {
	br      *bufio.Reader
	term    byte // '\n', or '\r' for a file with old Mac line ends
	no      int
	max     int
	pending []line
	long    []byte
}

func newLineReader(r io.Reader, term byte, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), term: term, max: max}
}

// next returns the next line, or io.EOF after the last one.
func (lr *lineReader) next() (line, error) {
	if len(lr.pending) > 0 {
		l := lr.pending[0]
		lr.pending = lr.pending[1:]
		return l, nil
	}
	b, err := lr.br.ReadSlice(lr.term)
	tooLong := false
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = lr.br.ReadSlice(lr.term)
			if !tooLong {
				lr.long = append(lr.long, b...)
				if len(lr.long) > lr.max {
					lr.long, tooLong = lr.long[:lr.max], true
				}
			}
		}
		b = lr.long
	}
	if err != nil && (err != io.EOF || len(b) == 0) {
		return line{}, err
	}
	lr.no++
	if !tooLong && len(b) > lr.max+2 { // a line end is not counted
		b, tooLong = b[:lr.max], true
	}
	if !tooLong {
		if n := len(b); n > 0 && b[n-1] == lr.term {
			b = b[:n-1]
		}
		if n := len(b); lr.term == '\n' && n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return line{text: b, no: lr.no, tooLong: tooLong}, nil
}

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
