package sources

import (
	"bufio"
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
// the file can no longer count as UTF-8 with stray lines.
func strayLines(ctx context.Context, r io.Reader) (stray, lines int64, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	valid := true // the line so far
	var tail []byte
	for {
		piece, err := br.ReadSlice('\n')
		if len(piece) > 0 {
			if len(tail) > 0 {
				piece = append(tail, piece...)
				tail = tail[:0]
			}
			end := len(piece)
			if errors.Is(err, bufio.ErrBufferFull) {
				end -= incompleteRuneTail(piece)
				tail = append(tail, piece[end:]...)
			}
			if valid && !utf8.Valid(piece[:end]) {
				valid = false
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil || err == io.EOF && (len(piece) > 0 || len(tail) > 0):
			lines++
			if !valid {
				stray++
				if stray > maxStrayLines {
					return stray, lines, nil
				}
			}
			valid = true
			if lines%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return 0, 0, err
				}
			}
		}
		if err == io.EOF {
			return stray, lines, nil
		}
		if err != nil {
			return 0, 0, err
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
