package spillset

import (
	"math/rand/v2"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdisk"
)

// TestSetExactAcrossSpills: a set with a small budget answers as a Go map does, for fresh
// hashes, repeats of hashes still in memory and repeats of hashes spilled runs ago (merged
// or not), the hash 0 too, while what it holds in memory stays within the budget.
func TestSetExactAcrossSpills(t *testing.T) {
	t.Parallel()
	const budget = 64 << 10
	dir := t.TempDir()
	s := New(budget, dir)
	ref := map[uint64]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	var keys []uint64
	for i := range 300_000 {
		var k uint64
		switch {
		case i%10 == 3 && len(keys) > 0: // an earlier one, near or far
			k = keys[rng.IntN(len(keys))]
		case i%1000 == 7:
			k = 0
		default:
			k = rng.Uint64()
			keys = append(keys, k)
		}
		added, err := s.Add(k)
		require.NoError(t, err)
		require.Equal(t, !ref[k], added, "Add(%#x) at %d", k, i)
		ref[k] = true
		require.LessOrEqual(t, s.Stats().Bytes, int64(budget), "memory at %d", i)
	}
	st := s.Stats()
	require.Equal(t, int64(len(ref)), s.Len())
	require.LessOrEqual(t, st.PeakBytes, int64(budget))
	require.Greater(t, st.Spills, 20, "it spilled")
	require.Positive(t, st.Merges, "it merged")
	require.Positive(t, st.Found, "repeats were found on disk")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the spill file has no name")
	require.NoError(t, s.Close())
	t.Logf("%+v", st)
}

// TestSetUnboundedStaysInMemory: a set without a budget never spills.
func TestSetUnboundedStaysInMemory(t *testing.T) {
	t.Parallel()
	s := New(0, t.TempDir())
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		added, err := s.Add(rng.Uint64())
		require.NoError(t, err)
		require.True(t, added)
	}
	st := s.Stats()
	require.Zero(t, st.Spills)
	require.Equal(t, int64(200_000), st.Len)
	require.LessOrEqual(t, st.Bytes, int64(21*200_000), "at most 21 bytes a hash")
}

// TestSetFullDisk: a set that cannot write its spill file fails with the disk's error,
// saying what it was doing and where, stays failed, and leaves no file behind.
func TestSetFullDisk(t *testing.T) {
	t.Parallel()
	dir := testdisk.Small(t, 1<<20)
	testdisk.Fill(t, dir, 0)
	s := New(MinBudget, dir)
	rng := rand.New(rand.NewPCG(7, 8))
	var err error
	for i := 0; i < 100_000 && err == nil; i++ {
		_, err = s.Add(rng.Uint64())
	}
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorContains(t, err, "spill the e-mail hashes beyond the memory budget (16384 bytes) to "+dir+": write the spill file: ")
	_, again := s.Add(1)
	require.Equal(t, err, again, "failed for good")
	require.Equal(t, err, s.Err())
	require.NoError(t, s.Close())
	requireOnly(t, dir, "filler")
}

// TestSetFileFreedAtClose: the spill file has no name while the set holds it, and its room
// on the disk is free again once the set is closed.
func TestSetFileFreedAtClose(t *testing.T) {
	t.Parallel()
	dir := testdisk.Small(t, 8<<20)
	before := diskUsed(t, dir)
	s := New(MinBudget, dir)
	rng := rand.New(rand.NewPCG(9, 10))
	for range 200_000 {
		_, err := s.Add(rng.Uint64())
		require.NoError(t, err)
	}
	requireOnly(t, dir)
	require.Greater(t, diskUsed(t, dir), before+1<<20, "the runs are on the disk")
	require.NoError(t, s.Close())
	require.Equal(t, before, diskUsed(t, dir))
	_, err := s.Add(1)
	require.ErrorIs(t, err, errClosed)
}

func requireOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	require.Equal(t, names, got)
}

func diskUsed(t *testing.T, dir string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	return (st.Blocks - st.Bfree) * uint64(st.Bsize)
}

// TestTouchChangesNothing: touching hashes (before and after the set spilled) leaves the set
// as it was: the same length, and the same answers from Add as a set never touched.
func TestTouchChangesNothing(t *testing.T) {
	t.Parallel()
	touched, plain := New(MinBudget, t.TempDir()), New(MinBudget, t.TempDir())
	defer touched.Close()
	defer plain.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, 20_000)
	for i := range keys {
		keys[i] = rng.Uint64()
		if i%7 == 6 {
			keys[i] = keys[rng.IntN(i)]
		}
	}
	for start := 0; start < len(keys); start += 500 {
		chunk := keys[start : start+500]
		n := touched.Len()
		for _, k := range chunk {
			touched.Touch(k)
		}
		require.Equal(t, n, touched.Len(), "touching added nothing")
		for _, k := range chunk {
			a, err := touched.Add(k)
			require.NoError(t, err)
			b, err := plain.Add(k)
			require.NoError(t, err)
			require.Equal(t, b, a, "hash %x", k)
		}
	}
	require.Positive(t, touched.Stats().Spills, "the set spilled: its filter was touched too")
}
