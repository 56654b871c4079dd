package state_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdisk"
	"github.com/subsync/subsync/state"
)

// saveSpread saves n fingerprints of list (with crowd > 0, one in crowd crowding the first
// bucket and one the last; the e-mail hash 0 and the extremes of buckets among them), then
// changes a few of them, kept as recent changes; it returns the e-mail hashes.
func saveSpread(t *testing.T, s *state.Store, list int64, n, crowd int) []uint64 {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(list), 9))
	set := state.NewFingerprintSet(list)
	emails := []uint64{0, 1<<52 - 1, 1 << 52, 1<<63 - 1, 1 << 63, ^uint64(0)}
	for i := range n {
		e := rng.Uint64()
		switch {
		case crowd > 0 && i%crowd == 0:
			e &= 0x000f_ffff_ffff_ffff
		case crowd > 0 && i%crowd == 1:
			e |= 0xfff0_0000_0000_0000
		}
		emails = append(emails, e)
	}
	for i, e := range emails {
		set.Add(state.Fingerprint{Email: e, Payload: uint64(i), Source: uint64(i) * 3})
	}
	require.NoError(t, s.SaveFingerprints(ctx, set))
	for i := 0; i < len(emails); i += 97 {
		set.Add(state.Fingerprint{Email: emails[i], Payload: uint64(i) + 1, Source: 5})
	}
	require.NoError(t, s.SaveFingerprints(ctx, set))
	return emails
}

// tempFiles lists the files of dir the process holds open, removed from dir or not (a set's
// temporary file is removed from its folder as soon as it is created), by their descriptors'
// paths in /proc/self/fd.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var held []string
	for _, fd := range fds {
		path := filepath.Join("/proc/self/fd", fd.Name())
		target, err := os.Readlink(path)
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			held = append(held, path)
		}
	}
	return held
}

// TestFingerprintsBeyondBudget: a list's fingerprints loaded beyond a (tiny) memory budget
// are on a temporary file, and answer Lookup, Index and LookupBatch exactly as the same
// fingerprints loaded in memory; the file is gone from its folder, and released by Close.
func TestFingerprintsBeyondBudget(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		emails := saveSpread(t, s, 3, 60_000, 50)
		mem, err := s.LoadFingerprints(ctx, 3)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(7, 8))
		probe := slices.Clone(emails)
		for _, e := range emails[:5000] {
			probe = append(probe, e-1, e+1, rng.Uint64())
		}
		// 1.5 MiB: some 11,000 of each table's first slots in memory (the budget less
		// spillOverhead), the others on file; 64 KiB: every slot on file.
		var onFile *state.FingerprintSet
		var dir string
		onDisk := map[int64]int64{}
		for _, budget := range []int64{3 << 19, 64 << 10} {
			if onFile != nil {
				require.NoError(t, onFile.Close())
				require.Empty(t, tempFiles(t, dir), "released by Close")
			}
			dir = filepath.Join(t.TempDir(), "tmp") // created by the load
			onFile, err = s.LoadFingerprintsWithin(ctx, 3, state.FingerprintLimits{MemoryBudget: budget, TempDir: dir})
			require.NoError(t, err)
			require.False(t, mem.Spilled())
			require.True(t, onFile.Spilled())
			require.Equal(t, mem.Len(), onFile.Len())
			require.Equal(t, len(emails), onFile.Len())
			require.Equal(t, mem.IndexBound(), onFile.IndexBound())
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, left, "the file is removed from its folder at once")
			held := tempFiles(t, dir)
			require.Len(t, held, 2, "a file a half, held open")
			for _, fd := range held {
				st, err := os.Stat(fd)
				require.NoError(t, err)
				onDisk[budget] += st.Size()
			}
			sameAnswers(t, mem, onFile, probe)
		}
		require.Equal(t, int64(mem.IndexBound()-1)*24, onDisk[64<<10], "every slot on file")
		kept := onDisk[64<<10] - onDisk[3<<19]
		require.Equal(t, int64(2*((3<<19-1<<20)/2/24)*24), kept, "bytes of slots kept in memory: the budget less 1 MiB")

		// A save of many changes from the set on file folds the recent changes into the
		// buckets a few buckets at a time.
		for _, e := range emails[:len(emails)/2] {
			onFile.Add(state.Fingerprint{Email: e, Payload: e ^ 1, Source: 11})
		}
		require.NoError(t, s.SaveFingerprints(ctx, onFile))
		var recent int
		require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_fingerprint_recent").Scan(&recent))
		require.Zero(t, recent, "folded into the buckets")
		again, err := s.LoadFingerprints(ctx, 3)
		require.NoError(t, err)
		require.Equal(t, len(emails), again.Len())
		for k, e := range emails {
			want, _, err := mem.Lookup(e)
			require.NoError(t, err)
			if k < len(emails)/2 {
				want = state.Fingerprint{Email: e, Payload: e ^ 1, Source: 11}
			}
			got, ok, err := again.Lookup(e)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, want, got)
		}

		require.NoError(t, onFile.Close())
		require.NoError(t, onFile.Close(), "closing again")
		require.Empty(t, tempFiles(t, dir), "released by Close")
		// A lookup on a closed file fails: it is not taken for a fingerprint not found.
		_, _, err = onFile.Lookup(emails[7])
		require.ErrorContains(t, err, "read the fingerprints' temporary file")
		_, _, err = onFile.Index(emails[7])
		require.Error(t, err)
		fps, found := make([]state.Fingerprint, 10), make([]bool, 10)
		require.Error(t, onFile.LookupBatch(probe[:10], fps, found, nil))
	})
}

// sameAnswers checks that set answers Lookup, Index and LookupBatch for every probe as want
// does.
func sameAnswers(t *testing.T, want, set *state.FingerprintSet, probe []uint64) {
	t.Helper()
	for _, e := range probe {
		wfp, wok, err := want.Lookup(e)
		require.NoError(t, err)
		fp, ok, err := set.Lookup(e)
		require.NoError(t, err)
		require.Equal(t, wok, ok, "%x", e)
		require.Equal(t, wfp, fp, "%x", e)
		wi, wok, err := want.Index(e)
		require.NoError(t, err)
		i, ok, err := set.Index(e)
		require.NoError(t, err)
		require.Equal(t, wok, ok, "%x", e)
		require.Equal(t, wi, i, "%x", e)
	}
	batch := func(set *state.FingerprintSet) ([]state.Fingerprint, []bool, []int32) {
		fps, found, idx := make([]state.Fingerprint, len(probe)), make([]bool, len(probe)), make([]int32, len(probe))
		require.NoError(t, set.LookupBatch(probe, fps, found, idx))
		return fps, found, idx
	}
	wfps, wfound, widx := batch(want)
	fps, found, idx := batch(set)
	require.Equal(t, wfps, fps)
	require.Equal(t, wfound, found)
	require.Equal(t, widx, idx)
}

// TestFingerprintsBeyondBudgetMemory: a set loaded beyond its memory budget holds less than
// the budget, where the same set in memory holds about 33 bytes a fingerprint. Not parallel:
// it measures the heap.
func TestFingerprintsBeyondBudgetMemory(t *testing.T) {
	const n, budget = 400_000, int64(1 << 20)
	for _, d := range []struct {
		name string
		open func(*testing.T) *state.Store
	}{{"sqlite", newSQLite}, {"postgres", newPostgres}} {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			ctx := context.Background()
			saveSpread(t, s, 4, n, 0)
			held := func(load func() *state.FingerprintSet) (*state.FingerprintSet, int64) {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				set := load()
				runtime.GC()
				runtime.ReadMemStats(&after)
				return set, int64(after.HeapAlloc) - int64(before.HeapAlloc)
			}
			mem, inMemory := held(func() *state.FingerprintSet {
				set, err := s.LoadFingerprints(ctx, 4)
				require.NoError(t, err)
				return set
			})
			require.Greater(t, inMemory, int64(n*30), "in memory")
			runtime.KeepAlive(mem)
			mem = nil
			// 1 MiB keeps no slot in memory (spillOverhead), 4 MiB some of them.
			for _, budget := range []int64{budget, 4 * budget} {
				onFile, spilled := held(func() *state.FingerprintSet {
					set, err := s.LoadFingerprintsWithin(ctx, 4, state.FingerprintLimits{MemoryBudget: budget, TempDir: t.TempDir()})
					require.NoError(t, err)
					return set
				})
				t.Logf("%d fingerprints hold %d bytes in memory, %d beyond a budget of %d", onFile.Len(), inMemory, spilled, budget)
				require.True(t, onFile.Spilled())
				require.Less(t, spilled, budget, "beyond the budget")
				require.NoError(t, onFile.Close())
			}
		})
	}
}

// TestFingerprintsBeyondBudgetFullDisk: a set that cannot be written to its temporary file
// (a full disk) fails to load with an error naming the file's folder and the disk's
// refusal, and leaves no space taken.
func TestFingerprintsBeyondBudgetFullDisk(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		saveSpread(t, s, 5, 100_000, 0) // about 3.3 MB on file
		disk := testdisk.Small(t, 1<<20)
		dir := filepath.Join(disk, "tmp")
		_, err := s.LoadFingerprintsWithin(ctx, 5, state.FingerprintLimits{MemoryBudget: 64 << 10, TempDir: dir})
		require.Error(t, err)
		require.ErrorContains(t, err, "load fingerprints of list 5")
		require.ErrorContains(t, err, "fingerprints beyond the memory budget: write their temporary file in "+dir)
		require.ErrorIs(t, err, syscall.ENOSPC)
		require.True(t, state.IsDiskFull(err))
		require.Empty(t, tempFiles(t, dir), "closed")
		var st syscall.Statfs_t
		require.NoError(t, syscall.Statfs(disk, &st))
		require.Equal(t, st.Blocks, st.Bfree, "the disk's space given back")
	})
}
