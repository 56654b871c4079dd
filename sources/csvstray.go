package sources

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// A file without a byte order mark is read as UTF-8 when it is UTF-8 but for a few stray
// lines (a row pasted from another program): at most maxStrayLines lines, and at most one in
// strayLineRatio. Past that limit, a file with at least as many lines of UTF-8 letters as
// lines that are not UTF-8 is still UTF-8 (each stray value read as Windows-1252 with a
// warning); one with more than maxStrayLines of each cannot be told and is refused; anything
// else is read as Windows-1252 throughout (see chooseEncoding).
const (
	maxStrayLines  = 100
	strayLineRatio = 100
)

// maxWarnings bounds the warnings a CSVReader keeps (it counts them all).
const maxWarnings = 1000

// Stray-line policies of CSVOptions.StrayLines.
const (
	StrayDecode = "decode" // decode the stray values as Windows-1252 and warn (the default)
	StrayReject = "reject" // reject the rows that hold them
)

// strayLines counts the lines of r, and those that are not valid UTF-8, stopping early once
// the file can no longer count as UTF-8 with stray lines. It reads 256 KiB at a time: a block
// that is valid UTF-8 throughout (nearly all of them) only has its lines counted, for a
// line end never falls inside a character; the lines of another are checked one by one.
func strayLines(ctx context.Context, r io.Reader) (stray, lines int64, err error) {
	return strayLinesSized(ctx, r, 256<<10)
}

func strayLinesSized(ctx context.Context, r io.Reader, size int) (stray, lines int64, err error) {
	buf := make([]byte, 0, size+utf8.UTFMax)
	open, valid := false, true // a line has begun (bytes since the last line end); it is valid so far
	for {
		n, rerr := io.ReadAtLeast(r, buf[len(buf):cap(buf)], 1)
		buf = buf[:len(buf)+n]
		keep := 0 // an incomplete character at the end waits for the next read
		if rerr == nil {
			keep = incompleteRuneTail(buf)
		}
		data := buf[:len(buf)-keep]
		if valid && utf8.Valid(data) {
			if k := int64(bytes.Count(data, []byte{'\n'})); k > 0 {
				lines += k
				open = data[len(data)-1] != '\n'
			} else if len(data) > 0 {
				open = true
			}
		} else {
			for len(data) > 0 {
				i := bytes.IndexByte(data, '\n')
				piece := data
				if i >= 0 {
					piece = data[:i]
				}
				if valid && !utf8.Valid(piece) {
					valid = false
				}
				if i < 0 {
					open = true
					break
				}
				lines++
				if !valid {
					if stray++; stray > maxStrayLines {
						return stray, lines, nil
					}
				}
				open, valid, data = false, true, data[i+1:]
			}
		}
		buf = buf[:copy(buf, buf[len(buf)-keep:])]
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		switch {
		case errors.Is(rerr, io.EOF):
			if open {
				lines++
				if !valid {
					stray++
				}
			}
			return stray, lines, nil
		case rerr != nil:
			return 0, 0, rerr
		}
	}
}

// fewStray reports whether stray of lines lines leaves a file UTF-8.
func fewStray(stray, lines int64) bool {
	return stray == 0 || stray <= maxStrayLines && stray*strayLineRatio <= lines
}

// mixedCount is how many lines of a file hold UTF-8 letters (valid UTF-8 outside ASCII), and
// how many are not valid UTF-8, with the first line of each (1-based; 0 when none).
type mixedCount struct {
	utf8, stray           int64
	firstUTF8, firstStray int64
}

// countMixed reads r to the end and counts its lines of UTF-8 letters and its lines that are
// not UTF-8, a piece at a time (memory stays bounded whatever a line's length).
func countMixed(ctx context.Context, r io.Reader) (mixedCount, error) {
	var m mixedCount
	br := bufio.NewReaderSize(r, 256<<10)
	var carry []byte                              // an incomplete character at the end of a piece
	line, valid, letters := int64(1), true, false // the line's number, what it held so far
	end := func() {
		switch {
		case !valid:
			if m.stray++; m.firstStray == 0 {
				m.firstStray = line
			}
		case letters:
			if m.utf8++; m.firstUTF8 == 0 {
				m.firstUTF8 = line
			}
		}
		line, valid, letters = line+1, true, false
	}
	for {
		piece, err := br.ReadSlice('\n')
		if len(piece) > 0 {
			data := append(carry, piece...)
			nl := data[len(data)-1] == '\n'
			keep := 0
			if !nl && err == bufio.ErrBufferFull {
				keep = incompleteRuneTail(data)
			}
			body := data[:len(data)-keep]
			if valid && !utf8.Valid(body) {
				valid = false
			}
			letters = letters || hasNonASCII(body)
			carry = append(carry[:0], data[len(data)-keep:]...)
			if nl {
				end()
			}
		}
		if cerr := ctx.Err(); cerr != nil {
			return m, cerr
		}
		switch {
		case err == io.EOF:
			if len(carry) > 0 || !valid || letters {
				if len(carry) > 0 {
					valid = false
				}
				end()
			}
			return m, nil
		case err != nil && err != bufio.ErrBufferFull:
			return m, err
		}
	}
}

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// mixedEncoding reads the file again from its start to decide its encoding past the
// stray-line limit (chooseEncoding): true for UTF-8.
func (r *CSVReader) mixedEncoding(ctx context.Context) (bool, error) {
	if _, err := r.f.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	m, err := countMixed(ctx, r.f)
	if err != nil {
		return false, err
	}
	return chooseEncoding(m)
}

// chooseEncoding decides a file's encoding past the stray-line limit from its lines: UTF-8
// when lines of UTF-8 letters are at least as many as lines that are not UTF-8, an error when
// both are more than maxStrayLines, Windows-1252 otherwise.
func chooseEncoding(m mixedCount) (utf8Text bool, err error) {
	switch {
	case m.utf8 >= m.stray:
		return true, nil
	case m.utf8 > maxStrayLines:
		return false, fmt.Errorf("%w: %d lines hold UTF-8 letters (the first is line %d) and %d lines "+
			"are not UTF-8 (the first is line %d), past the %d stray lines read as Windows-1252 in a UTF-8 file: "+
			"set the file's encoding: encoding = \"utf-8\" reads the others as Windows-1252 with a warning each "+
			"(stray_lines = \"reject\" rejects their rows instead), encoding = \"windows-1252\" reads every line so",
			ErrMixedEncoding, m.utf8, m.firstUTF8, m.stray, m.firstStray, maxStrayLines)
	}
	return false, nil
}

// decodeStray decodes a value that is not valid UTF-8 as Windows-1252.
func decodeStray(v string) string {
	out, err := charmap.Windows1252.NewDecoder().String(v)
	if err != nil {
		return v
	}
	return out
}
