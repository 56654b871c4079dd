package hashtab

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMapAsSet: a Map whose values are all 0 is a set of keys at 8 bytes a slot; keys that
// share their low bits (where the slot comes from) or their top bits (the table) and the key
// 0 are keys like any other; every table stays at most 3/4 full.
func TestMapAsSet(t *testing.T) {
	t.Parallel()
	var m Map
	ref := map[uint64]bool{}
	x := uint64(0x9E3779B97F4A7C15)
	for i := range 50_000 {
		k := x * uint64(i%20_000) // repeats, and 0 for i%20000 == 0
		switch i % 7 {
		case 0:
			k = uint64(i%3) << 40 // collide in the low bits
		case 1:
			k = uint64(i%5) | 7<<58 // one table
		}
		require.Equal(t, !ref[k], m.Add(k), "Add(%#x)", k)
		ref[k] = true
	}
	require.Equal(t, len(ref), m.Len())
	for k := range ref {
		require.True(t, m.Has(k), "%#x", k)
	}
	require.False(t, m.Has(12345))
	for _, tb := range m.t {
		require.LessOrEqual(t, tb.n*4, len(tb.keys)*3, "at most 3/4 full")
		require.Nil(t, tb.vals, "no values while every value is 0")
	}
}

// TestMapValues: a set becomes a map once a value is not 0, keeping the keys it had (their
// value 0); Put replaces a value, Add keeps it; growing keeps everything.
func TestMapValues(t *testing.T) {
	t.Parallel()
	var m Map
	x := uint64(0x9E3779B97F4A7C15)
	_, ok := m.Get(5)
	require.False(t, ok)
	for k := range uint64(5000) {
		m.Add(k * x)
	}
	m.Put(7*x, 42)
	require.False(t, m.Add(8*x)) // there already: kept
	m.Put(0, 9)                  // the key 0 (k = 0 above) too
	for k := uint64(5000); k < 20_000; k++ {
		m.Put(k*x, k)
	}
	require.Equal(t, 20_000, m.Len())
	for k := range uint64(20_000) {
		v, ok := m.Get(k * x)
		require.True(t, ok, k)
		switch {
		case k == 0:
			require.Equal(t, uint64(9), v)
		case k == 7:
			require.Equal(t, uint64(42), v)
		case k < 5000:
			require.Zero(t, v, k)
		default:
			require.Equal(t, k, v)
		}
	}
}

// TestMapGrowsInSteps: a large map grows a table at a time: the bytes allocated while it fills
// are a few times what it holds, never a copy of the whole map at once. Not parallel: it
// counts the bytes the process allocates.
func TestMapGrowsInSteps(t *testing.T) {
	const n = 400_000
	rng := rand.New(rand.NewPCG(1, 2))
	var m Map
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	last := ms.TotalAlloc
	for i := range n {
		m.Add(rng.Uint64())
		if i%500 == 499 {
			runtime.ReadMemStats(&ms)
			grew := ms.TotalAlloc - last
			last = ms.TotalAlloc
			if i >= 50_000 {
				require.Less(t, grew, uint64(4*(i+1)), "bytes allocated by the 500 adds up to %d", i+1)
			}
		}
	}
	require.Equal(t, n, m.Len())
	require.LessOrEqual(t, m.Slots()*8, 21*n, "at most 21 bytes a key")
}

// BenchmarkMap adds a million random keys to a set, looks each up, and makes it a map:
// ns/add, ns/get and bytes/key (the slots held at the end).
func BenchmarkMap(b *testing.B) {
	const n = 1_000_000
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	for _, valued := range []bool{false, true} {
		b.Run(fmt.Sprintf("valued=%v", valued), func(b *testing.B) {
			var m *Map
			var add, get int64
			for b.Loop() {
				m = &Map{}
				if valued {
					m.Put(1, 1)
				}
				t0 := b.Elapsed()
				for _, k := range keys {
					m.Add(k)
				}
				t1 := b.Elapsed()
				for _, k := range keys {
					if !m.Has(k) {
						b.Fatal("lost a key")
					}
				}
				add, get = add+int64(t1-t0), get+int64(b.Elapsed()-t1)
			}
			bytes := 8 * m.Slots()
			if valued {
				bytes *= 2
			}
			b.ReportMetric(float64(add)/float64(b.N)/n, "ns/add")
			b.ReportMetric(float64(get)/float64(b.N)/n, "ns/get")
			b.ReportMetric(float64(bytes)/float64(m.Len()), "bytes/key")
			b.ReportMetric(0, "ns/op")
		})
	}
}
