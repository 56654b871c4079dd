package spillset

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSetAdd adds a million fresh random hashes (one in ten an earlier one again),
// reporting ns/op (an Add), the filter's false positives among the lookups past memory
// (fp%), pages read per Add and spills. The budgets stand for 32 MiB at other sizes:
// "fits" holds the million in memory; "10M-at-32MiB" spills as ten million addresses do at
// 32 MiB (3.2 MiB for a million), "100M-at-32MiB" as a hundred million do (320 KiB).
func BenchmarkSetAdd(b *testing.B) {
	const n = 1_000_000
	for _, bc := range []struct {
		name   string
		budget int64
	}{{"fits", 32 << 20}, {"10M-at-32MiB", 32 << 20 / 10}, {"100M-at-32MiB", 32 << 20 / 100}} {
		b.Run(bc.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = rng.Uint64()
				if i%10 == 9 {
					keys[i] = keys[rng.IntN(i)]
				}
			}
			var st Stats
			b.ResetTimer()
			for b.Loop() {
				s := New(bc.budget, b.TempDir())
				for _, k := range keys {
					if _, err := s.Add(k); err != nil {
						b.Fatal(err)
					}
				}
				st = s.Stats()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/add")
			b.ReportMetric(0, "ns/op")
			fp := 0.0
			if st.Probes > st.Found {
				fp = 100 * float64(st.Maybes) / float64(st.Probes-st.Found)
			}
			b.ReportMetric(fp, "fp%")
			b.ReportMetric(float64(st.PageReads)/n, "reads/add")
			b.ReportMetric(float64(st.Spills), "spills")
			b.ReportMetric(float64(st.PeakBytes), "peak-bytes")
		})
	}
}
