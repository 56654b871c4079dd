package spillset

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSetAdd adds n random hashes (one in ten an earlier one again) to a set of the
// given budget, reporting ns/add, the filter's false positives among the lookups of new
// hashes past memory (fp%), its bits a hash spilled, pages read per add, spills and the peak
// memory counted, and the file's size at the end. "unbounded" is the set without a budget (the memory grows with the hashes);
// 1M at 320KiB spills as 100M hashes do at 32 MiB (the filter's bits a hash are those).
//
//	go test -run '^$' -bench SetAdd -benchtime 1x ./internal/spillset/
func BenchmarkSetAdd(b *testing.B) {
	for _, bc := range []struct {
		name   string
		n      int
		budget int64
	}{
		{"1M/unbounded", 1_000_000, 0},
		{"1M/32MiB", 1_000_000, 32 << 20},
		{"10M/unbounded", 10_000_000, 0},
		{"10M/32MiB", 10_000_000, 32 << 20},
		{"1M/320KiB", 1_000_000, 32 << 20 / 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			keys := make([]uint64, bc.n)
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
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bc.n), "ns/add")
			b.ReportMetric(0, "ns/op")
			fp, bits := 0.0, 0.0
			if st.Probes > st.Found {
				fp = 100 * float64(st.Maybes) / float64(st.Probes-st.Found)
			}
			if st.Spilled > 0 {
				bits = float64(st.FilterBits) / float64(st.Spilled)
			}
			b.ReportMetric(fp, "fp%")
			b.ReportMetric(bits, "bits/spilled")
			b.ReportMetric(float64(st.PageReads)/float64(bc.n), "reads/add")
			b.ReportMetric(float64(st.Spills), "spills")
			b.ReportMetric(float64(st.PeakBytes)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(st.FileBytes)/1e6, "file-MB")
		})
	}
}
