package sinktest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestArena(t *testing.T) {
	t.Parallel()
	var a arena
	require.Equal(t, strRef{}, a.add(""))
	require.Equal(t, "", a.str(strRef{}))
	type held struct {
		ref strRef
		s   string // as returned by str when added
		val string // a copy of the value
	}
	var all []held
	// Values that fill chunks unevenly, one larger than a chunk, and values added after it.
	for i, n := range []int{1, 1000, arenaChunk - 1500, 600, arenaChunk + 7, 3, arenaChunk / 2, arenaChunk / 2, 10} {
		val := strings.Repeat(string(rune('a'+i)), n)
		buf := []byte(val)
		ref := a.addBytes(buf)
		clear(buf) // the arena holds its own copy
		all = append(all, held{ref, a.str(ref), val})
	}
	for _, h := range all {
		require.Equal(t, h.val, a.str(h.ref))
		require.Equal(t, h.val, h.s, "a string handed out earlier changed")
	}
	for _, c := range a.chunks {
		require.True(t, cap(c) == arenaChunk || cap(c) == arenaChunk+7, "chunk of %d bytes", cap(c))
	}
}
