package jobs_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdisk"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// TestFullDisk: the disk under the SQLite queue (its database) or under the staging
// directory (the Postgres queue restores a staged file there) fills during an import. The run
// fails at once (a full disk is not retried for ever) with a message naming the path, the
// database is not corrupted, and once space is freed the next import completes.
func TestFullDisk(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		disk := testdisk.Small(t, 32<<20) // room for two imports once freed: the first resumes when its end was not recorded
		b := setup(t, backend)
		b.cfg.DataDir = filepath.Join(disk, "data")
		const n = 60_000
		invalid := func(i int) bool { return i%5 == 0 } // whole rejected rows fill the database
		path := contacts(t, t.TempDir(), n, invalid)
		rt := b.open(t)
		filler := testdisk.Fill(t, disk, 192<<10)

		where := filepath.Join(b.cfg.DataDir, "staged") // the Postgres queue restores the file there
		if backend == "sqlite" {
			where = filepath.Join(b.cfg.DataDir, jobs.SQLiteFile)
		}
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		start := time.Now()
		_, err = rt.Wait(wctx, jobID, nil)
		took := time.Since(start)
		require.Error(t, err)
		t.Logf("%s: failed in %s: %v", backend, took.Round(time.Millisecond), err)
		require.NotErrorIs(t, err, context.DeadlineExceeded, "a full disk is not retried for ever")
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Contains(t, err.Error(), where, "the message names the path")
		require.Contains(t, err.Error(), "full")
		require.Less(t, took, time.Minute, "the run fails at once")

		if backend == "sqlite" {
			var check string
			require.NoError(t, rt.State().DB().QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check))
			require.Equal(t, "ok", check, "the database is not corrupted")
		}

		require.NoError(t, os.Remove(filler))
		again, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		run, err := rt.Wait(ctx, again, nil)
		require.NoError(t, err)
		require.Equal(t, state.RunCompleted, run.State)
		require.Equal(t, int64(n-n/5), run.Counts.Sent)
		require.Equal(t, int64(n/5), run.Counts.Rejected)
		require.Len(t, b.emu.ListSubscribers(b.listID), n-n/5)
	})
}
