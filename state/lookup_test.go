package state

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkLookupBatch looks up each of a million loaded e-mail hashes once, in a random
// order, a thousand at a time (as a delta run's mappers do, a chunk each): ns/lookup is the
// time of one, without loading.
func BenchmarkLookupBatch(b *testing.B) {
	const n, batch = 1_000_000, 1000
	rng := rand.New(rand.NewPCG(1, 2))
	emails := make([]uint64, n)
	set := NewFingerprintSet(1)
	for i := range emails {
		emails[i] = rng.Uint64()
		set.Add(Fingerprint{Email: emails[i], Payload: uint64(i), Source: uint64(i) | 1})
	}
	buckets := make([][]byte, FingerprintBuckets)
	for bucket := range buckets {
		buckets[bucket] = appendSorted(nil, set.sortedPending(bucket))
	}
	builders := set.builders()
	for h := range builders {
		lo, hi := halfBuckets(h)
		for _, entries := range buckets[lo:hi] {
			builders[h].add(entries)
		}
	}
	if err := set.setHalves(&builders); err != nil {
		b.Fatal(err)
	}
	fps, found, idx := make([]Fingerprint, batch), make([]bool, batch), make([]int32, batch)
	for b.Loop() {
		for i := 0; i < n; i += batch {
			set.LookupBatch(emails[i:i+batch], fps, found, idx)
			if !found[batch-1] || fps[batch-1].Payload != uint64(i+batch-1) {
				b.Fatal("lost a fingerprint")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/lookup")
	b.ReportMetric(0, "ns/op")
}
