package sources

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStringSlabKeepsRowsIntact(t *testing.T) {
	t.Parallel()
	var s stringSlab
	type kept struct {
		fields []string
		want   []string
	}
	var all []kept
	// Enough rows to fill several text and string blocks, with a long and a wide row.
	for i := range 5000 {
		want := []string{fmt.Sprintf("row%d@example.com", i), "", fmt.Sprintf("Name %d", i)}
		switch i {
		case 1234:
			want[1] = strings.Repeat("x", slabTextBytes)
		case 2345:
			for j := range slabStrings {
				want = append(want, fmt.Sprint(j))
			}
		}
		var buf []byte
		var ends []int
		for _, f := range want {
			buf = append(buf, f...)
			ends = append(ends, len(buf))
		}
		fields := s.split(buf, ends)
		require.Equal(t, want, fields)
		require.Equal(t, len(fields), cap(fields), "row %d: spare capacity would let an append overwrite the next row", i)
		clear(buf) // the caller's buffer is reused: the strings must not share it
		all = append(all, kept{fields, want})
	}
	for i, k := range all {
		require.Equal(t, k.want, k.fields, "row %d after later rows", i)
	}
	require.Empty(t, s.split(nil, nil))
}

func TestASCIINoNUL(t *testing.T) {
	t.Parallel()
	naive := func(b []byte) bool {
		for _, c := range b {
			if c == 0 || c >= 0x80 {
				return false
			}
		}
		return true
	}
	for n := range 20 {
		b := []byte(strings.Repeat("a", n))
		require.True(t, asciiNoNUL(b), "len %d", n)
		for i := range n {
			for _, c := range []byte{0, 1, 0x7f, 0x80, 0xc3, 0xff} {
				b[i] = c
				require.Equal(t, naive(b), asciiNoNUL(b), "len %d byte %d = %#x", n, i, c)
				b[i] = 'a'
			}
		}
	}
}
