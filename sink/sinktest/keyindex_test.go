package sinktest

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkKeyIndex runs random adds, finds and removes on an index with the given hash and
// compares every answer with a map's.
func checkKeyIndex(t *testing.T, hash func(string) uint32, keys, ops int) {
	t.Helper()
	var keyOf []string // by id-1
	x := newKeyIndex(func(id uint32) string { return keyOf[id-1] })
	if hash != nil {
		x.hash = hash
	}
	want := map[string]uint32{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range ops {
		key := "k" + strconv.Itoa(rng.IntN(keys)) + "@example.com"
		switch rng.IntN(4) {
		case 0, 1: // add, or find an existing key
			next := uint32(len(keyOf) + 1)
			id, added := x.add(key, next)
			w, had := want[key]
			require.Equal(t, !had, added, key)
			if had {
				require.Equal(t, w, id, key)
				continue
			}
			require.Equal(t, next, id)
			keyOf = append(keyOf, key)
			want[key] = id
		case 2:
			x.remove(key)
			delete(want, key)
		case 3:
			require.Equal(t, want[key], x.find(key), key)
		}
		require.Equal(t, len(want), x.len())
	}
	for key, id := range want {
		require.Equal(t, id, x.find(key), key)
	}
	require.LessOrEqual(t, x.len()*4, len(x.slots)*3)
}

func TestKeyIndex(t *testing.T) {
	t.Parallel()
	t.Run("growing", func(t *testing.T) { checkKeyIndex(t, nil, 50_000, 200_000) })
	// Every key has one of three hashes: the keys are told apart by keyOf alone, and the
	// probes run long and past the end of the table, where removing must move slots back
	// across the wrap.
	t.Run("colliding", func(t *testing.T) {
		checkKeyIndex(t, func(key string) uint32 { return ^uint32(len(key) % 3) }, 300, 20_000)
	})
	// Hashes that differ only above the table's bits: equal homes, different hashes.
	t.Run("equal homes", func(t *testing.T) {
		checkKeyIndex(t, func(key string) uint32 { return uint32(len(key)) << 24 }, 2_000, 20_000)
	})
}

func TestKeyIndexEmpty(t *testing.T) {
	t.Parallel()
	x := newKeyIndex(func(uint32) string { panic("no ids") })
	require.Zero(t, x.find("a@example.com"))
	x.touch([]uint32{x.hash("a@example.com")})
	x.remove("a@example.com")
	require.Zero(t, x.len())
}
