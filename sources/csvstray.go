package sources

import (
	"bytes"
	"context"
	"errors"
	"io"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// A file without a byte order mark is read as UTF-8 when it is UTF-8 but for a few stray
// lines (a row pasted from another program): at most maxStrayLines lines, and at most one in
// strayLineRatio. Anything else is read as Windows-1252 throughout.
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

// decodeStray decodes a value that is not valid UTF-8 as Windows-1252.
func decodeStray(v string) string {
	out, err := charmap.Windows1252.NewDecoder().String(v)
	if err != nil {
		return v
	}
	return out
}
