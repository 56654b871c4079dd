package state

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkLookupBatch looks up each of a million loaded e-mail hashes once, in a random
// order, a thousand at a time (as a delta run's mappers do, a chunk each): ns/lookup is the
// time of one, without loading.
func BenchmarkLookupBatch(b *testing.B) { benchmarkLookupBatch(b, "") }

// BenchmarkLookupBatchOnFile is BenchmarkLookupBatch for a set beyond its memory budget,
// whose tables are on a temporary file (in the page cache: written just before).
func BenchmarkLookupBatchOnFile(b *testing.B) { benchmarkLookupBatch(b, b.TempDir()) }

func benchmarkLookupBatch(b *testing.B, spillTo string) {
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
		builders[h].spillTo = spillTo
		lo, hi := halfBuckets(h)
		for _, entries := range buckets[lo:hi] {
			if err := builders[h].add(entries); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := set.setHalves(&builders); err != nil {
		b.Fatal(err)
	}
	defer set.Close()
	if set.Spilled() != (spillTo != "") {
		b.Fatalf("spilled: %v", set.Spilled())
	}
	fps, found, idx := make([]Fingerprint, batch), make([]bool, batch), make([]int32, batch)
	for b.Loop() {
		for i := 0; i < n; i += batch {
			if err := set.LookupBatch(emails[i:i+batch], fps, found, idx); err != nil {
				b.Fatal(err)
			}
			if !found[batch-1] || fps[batch-1].Payload != uint64(i+batch-1) {
				b.Fatal("lost a fingerprint")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/lookup")
	b.ReportMetric(0, "ns/op")
}
