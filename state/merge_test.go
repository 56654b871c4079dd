package state

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMergePartsLikeMergingInTurn: merging a bucket's parts at once gives what merging them
// two at a time, oldest first, gives: every e-mail once, the latest part's entry winning,
// whatever the parts' sizes and overlaps (e-mails 0 and ^0 included).
func TestMergePartsLikeMergingInTurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 2000 {
		parts := 1 + rng.IntN(maxParts+2)
		pool := []uint64{0, ^uint64(0)}
		for range 1 + rng.IntN(40) {
			pool = append(pool, rng.Uint64N(1<<uint(8+rng.IntN(56))))
		}
		var buf []byte
		var ends []int
		for p := range parts {
			var keys []uint64
			for _, k := range pool {
				if rng.IntN(3) == 0 {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			keys = slices.Compact(keys)
			for _, k := range keys {
				buf = binary.LittleEndian.AppendUint64(buf, k)
				buf = binary.LittleEndian.AppendUint64(buf, uint64(p)) // the payload: which part
				buf = binary.LittleEndian.AppendUint64(buf, k^uint64(p))
			}
			ends = append(ends, len(buf))
		}
		want := buf[:ends[0]]
		for i := 1; i < len(ends); i++ {
			want = mergeEntries(nil, want, buf[ends[i-1]:ends[i]])
		}
		got := mergeParts([]byte("prefix"), buf, ends)
		require.Equal(t, "prefix", string(got[:6]), "round %d", round)
		require.Equal(t, string(want), string(got[6:]), "round %d: %d parts", round, parts)
	}
}
