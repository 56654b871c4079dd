package sources

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// referenceLines is what lineReader must yield for data: the lines split at term (a CRLF's
// CR dropped too), a line longer than max+2 bytes with its end as tooLong with its first max
// bytes, the last line without a terminator unless empty.
func referenceLines(data []byte, term byte, max int) []line {
	var out []line
	for no := 1; len(data) > 0; no++ {
		k := bytes.IndexByte(data, term)
		raw := data
		if k >= 0 {
			raw = data[:k+1]
		}
		data = data[len(raw):]
		if len(raw) > max+2 {
			out = append(out, line{text: raw[:max], no: no, tooLong: true})
			continue
		}
		text := bytes.TrimSuffix(raw, []byte{term})
		if term == '\n' {
			text = bytes.TrimSuffix(text, []byte{'\r'})
		}
		out = append(out, line{text: text, no: no})
	}
	return out
}

// TestLineReaderBlocks: lines cut by the end of a block, longer than a block, longer than
// the limit, read a byte at a time or in halves, come out as the reference says, and the
// lines yielded earlier are never overwritten by the reads that follow.
func TestLineReaderBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 40 {
		var data []byte
		term := byte('\n')
		if round%7 == 6 {
			term = '\r'
		}
		for len(data) < 3*lineBlock {
			n := rng.IntN(200)
			switch rng.IntN(20) {
			case 0:
				n = lineBlock - 3 + rng.IntN(6)
			case 1:
				n = 2*lineBlock + rng.IntN(100)
			}
			for range n {
				data = append(data, byte('a'+rng.IntN(26)))
			}
			if term == '\n' && rng.IntN(3) == 0 {
				data = append(data, '\r')
			}
			data = append(data, term)
		}
		if round%2 == 1 {
			data = data[:len(data)-1-rng.IntN(20)] // no terminator at the end
		}
		max := []int{50, lineBlock, 3 * lineBlock, 1 << 20}[round%4]
		readers := []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.OneByteReader, iotest.HalfReader}
		lr := newLineReader(readers[round%3](bytes.NewReader(data)), term, max)
		want := referenceLines(data, term, max)
		var got []line
		for {
			l, err := lr.next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			got = append(got, l) // not copied: compared once every line was read
		}
		require.Equal(t, len(want), len(got), "round %d", round)
		for i := range want {
			// Lines yielded long ago are still as they were: their block is never written again.
			require.Equal(t, want[i], got[i], "round %d line %d", round, i+1)
		}
	}
}
