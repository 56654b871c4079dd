package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPairTable: a set while every value is 0, a map once one is not; the hash 0 is a key
// like any other; growing keeps everything.
func TestPairTable(t *testing.T) {
	t.Parallel()
	var p pairTable
	m := uint64(0x9E3779B97F4A7C15)
	_, ok := p.get(5)
	require.False(t, ok)
	for k := uint64(0); k < 5000; k++ {
		p.putIfAbsent(k*m, 0)
	}
	require.Nil(t, p.vals, "a set until a value is not 0")
	p.put(m*7, 42)
	p.putIfAbsent(m*8, 43) // already there: kept
	for k := uint64(5000); k < 20000; k++ {
		p.put(k*m, k)
	}
	require.Equal(t, 20000, p.n)
	for k := uint64(0); k < 20000; k++ {
		v, ok := p.get(k * m)
		require.True(t, ok, k)
		switch {
		case k == 7:
			require.Equal(t, uint64(42), v)
		case k < 5000:
			require.Zero(t, v, k)
		default:
			require.Equal(t, k, v)
		}
	}
	_, ok = p.get(12345)
	require.False(t, ok)
}
