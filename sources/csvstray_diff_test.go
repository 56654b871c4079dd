package sources

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// TestStrayLinesBlocks: counting stray lines a block at a time gives what checking every line
// gives, whatever the block size (a line or a character split between blocks) and the
// reader's pieces, on text of valid and invalid lines, long lines and no final line end.
func TestStrayLinesBlocks(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"a", "ø", "€", "😀", ",", "\n", "\n", "\xe6", "\xf8\xe5", "\xc3", "\xe2\x82", "\r\n", "   "}
	for round := range 400 {
		var b bytes.Buffer
		n := rnd.IntN(300)
		for range n {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		if round%7 == 0 {
			b.WriteString(string(bytes.Repeat([]byte("x"), 5000))) // a line longer than a block
		}
		if round%3 == 0 {
			for range 150 { // more stray lines than allowed: counting stops early
				b.WriteString("\xe6\n")
			}
		}
		data := b.Bytes()
		wantStray, wantLines, err := strayLinesByLine(context.Background(), bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 2, 3, 5, 64, 4096, 256 << 10} {
			for _, r := range []io.Reader{bytes.NewReader(data), iotest.OneByteReader(bytes.NewReader(data)),
				iotest.HalfReader(bytes.NewReader(data))} {
				stray, lines, err := strayLinesSized(context.Background(), r, size)
				if err != nil {
					t.Fatal(err)
				}
				if stray != wantStray || (wantStray <= maxStrayLines && lines != wantLines) {
					t.Fatalf("round %d, block %d: %d stray of %d lines, want %d of %d (%q)", round, size, stray, lines,
						wantStray, wantLines, data)
				}
			}
		}
	}
}

// BenchmarkStrayLines counts the stray lines of 1,000,000 contact lines (74 MB, æøå in one
// line in eight), a block at a time and, for comparison, a line at a time (what opening a
// large CSV file did before).
//
//	go test -run '^$' -bench StrayLines ./sources/
func BenchmarkStrayLines(b *testing.B) {
	var buf bytes.Buffer
	for i := range 1_000_000 {
		city := "Oslo"
		if i%8 == 0 {
			city = "Tromsø"
		}
		buf.WriteString("kontakt")
		buf.WriteString(string(rune('a' + i%26)))
		buf.WriteString("@example.com,Ola,Nordmann,Storgata 1,0150," + city + ",91234567\n")
	}
	data := buf.Bytes()
	for _, c := range []struct {
		name string
		fn   func(context.Context, io.Reader) (int64, int64, error)
	}{{"blocks", strayLines}, {"lines", strayLinesByLine}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if stray, lines, err := c.fn(context.Background(), bytes.NewReader(data)); err != nil || stray != 0 || lines != 1_000_000 {
					b.Fatal(stray, lines, err)
				}
			}
		})
	}
}

// strayLinesByLine is how strayLines worked before it read blocks: the reference the
// differential test and the benchmark compare it with.
func strayLinesByLine(ctx context.Context, r io.Reader) (stray, lines int64, err error) {
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
