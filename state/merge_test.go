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

// BenchmarkMergeParts merges the parts of 4,096 buckets as a load after a first sync of a
// million rows does: four parts a bucket (one a save of 250,000), about 61 entries each.
func BenchmarkMergeParts(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const buckets, parts, per = 4096, 4, 61
	bufs, endss := make([][]byte, buckets), make([][]int, buckets)
	for k := range buckets {
		for range parts {
			keys := make([]uint64, per)
			for i := range keys {
				keys[i] = rng.Uint64()
			}
			slices.Sort(keys)
			for _, key := range keys {
				bufs[k] = binary.LittleEndian.AppendUint64(bufs[k], key)
				bufs[k] = binary.LittleEndian.AppendUint64(bufs[k], key>>1)
				bufs[k] = binary.LittleEndian.AppendUint64(bufs[k], key>>2)
			}
			endss[k] = append(endss[k], len(bufs[k]))
		}
	}
	dst := make([]byte, 0, buckets*parts*per*fpEntrySize)
	for b.Loop() {
		dst = dst[:0]
		for k := range buckets {
			dst = mergeParts(dst, bufs[k], endss[k])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(buckets*parts*per), "ns/entry")
	b.ReportMetric(0, "ns/op")
}
