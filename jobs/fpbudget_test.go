package jobs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdisk"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestDeltaBeyondMemoryBudget: a delta sync whose fingerprints are beyond a tiny memory
// budget (looked up in a temporary file) sends, finds unchanged, duplicate and rejected
// exactly what it does with the default budget, in its dry run too, and leaves no file
// behind, nor one held open.
func TestDeltaBeyondMemoryBudget(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		type books struct{ first, plan, second state.Counts }
		run := func(budget int64) (books, string) {
			ctx := context.Background()
			b := setup(t, backend)
			b.cfg.MemoryBudget = budget
			const n = 30_000
			path := contacts(t, t.TempDir(), n, func(i int) bool { return i%5_000 == 3 })
			b.cfg.Syncs = []jobs.SyncSpec{{Name: "big", ListID: b.listID, Source: sources.Config{Path: path}}}
			rt := b.open(t)
			syncNow := func() state.Run {
				t.Helper()
				id, err := rt.EnqueueSync(ctx, "big", false)
				return waitRun(t, rt, id, err)
			}
			var got books
			got.first = syncNow().Counts

			// One row in 97 changes, and a few addresses come twice, changed or not, known or new.
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			for i := 1; i < len(lines); i += 97 {
				lines[i] = strings.Replace(lines[i], ",Ola", ",Kari", 1)
			}
			for i := 1; i <= 40; i++ {
				lines = append(lines, fmt.Sprintf("person%d@example.com,Ola%d,Nordmann", i*700, i*700+i%2),
					fmt.Sprintf("new%d@example.com,Nina,Nordmann", i%20))
			}
			require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
			plan, err := rt.PlanSync(ctx, "big", false, nil)
			require.NoError(t, err)
			got.plan = plan.Counts
			got.second = syncNow().Counts

			tmp := filepath.Join(b.cfg.DataDir, "tmp")
			left, err := os.ReadDir(tmp)
			if !os.IsNotExist(err) {
				require.NoError(t, err)
			}
			require.Empty(t, left, "nothing left in %s", tmp)
			require.Empty(t, heldFiles(t, tmp), "no file of %s held open once the runs ended", tmp)
			return got, b.logs.String()
		}
		want, logs := run(0)
		require.NotContains(t, logs, "beyond the memory budget")
		require.Equal(t, int64(30_000-6), want.first.Sent)
		require.Positive(t, want.second.Unchanged)
		require.Positive(t, want.second.Duplicates)
		t.Logf("books: %+v", want)
		got, logs := run(64 << 10)
		require.Contains(t, logs, "the list's fingerprints are beyond the memory budget: looked up in a temporary file")
		require.Equal(t, want, got)
	})
}

// TestDeltaBeyondMemoryBudgetFullDisk: a delta sync whose fingerprints beyond the memory
// budget cannot be written to their temporary file (the disk under data_dir/tmp is full)
// fails at once, saying so and where; once there is room the next sync completes.
func TestDeltaBeyondMemoryBudgetFullDisk(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		b.cfg.MemoryBudget = 64 << 10
		const n = 30_000 // about 1 MB of fingerprints on file
		path := contacts(t, t.TempDir(), n, nil)
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "big", ListID: b.listID, Source: sources.Config{Path: path}}}
		rt := b.open(t)
		id, err := rt.EnqueueSync(ctx, "big", false)
		require.Equal(t, int64(n), waitRun(t, rt, id, err).Counts.Sent)

		tmp := filepath.Join(b.cfg.DataDir, "tmp")
		require.NoError(t, os.RemoveAll(tmp))
		disk := testdisk.Small(t, 256<<10)
		require.NoError(t, os.Symlink(disk, tmp))
		id, err = rt.EnqueueSync(ctx, "big", false)
		require.NoError(t, err)
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		_, err = rt.Wait(wctx, id, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		t.Logf("%s: %v", backend, err)
		msg := err.Error()
		require.Contains(t, msg, "is full: free space and run again")
		require.Contains(t, msg, "fingerprints beyond the memory budget: write their temporary file in "+tmp)
		require.Contains(t, msg, "no space left on device")
		require.Empty(t, heldFiles(t, disk), "the file is closed")
		var st syscall.Statfs_t
		require.NoError(t, syscall.Statfs(disk, &st))
		require.Equal(t, st.Blocks, st.Bfree, "its space given back")

		require.NoError(t, os.Remove(tmp))
		id, err = rt.EnqueueSync(ctx, "big", false)
		run := waitRun(t, rt, id, err)
		require.Equal(t, state.RunCompleted, run.State)
		require.Equal(t, int64(n), run.Counts.Unchanged)
	})
}

// heldFiles lists the files of dir the process holds open, removed from dir or not.
func heldFiles(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var held []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			held = append(held, target)
		}
	}
	return held
}
