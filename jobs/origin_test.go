package jobs_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// TestStagedImportReadsTheFileWhereItWasQueued (#34 point 1): on Postgres a file is staged
// for any worker, and a worker on the machine that queued it, finding it unchanged, reads it
// where it is instead of restoring the staged copy to a file of its own first (nothing is
// restored under data_dir/staged); a file changed since (another size or modification time)
// is imported as staged, from the restored copy. SQLite stages nothing: every run reads the
// path.
func TestStagedImportReadsTheFileWhereItWasQueued(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		rt := b.open(t)
		restored := filepath.Join(b.cfg.DataDir, "staged")

		path := contacts(t, t.TempDir(), 2_000, nil)
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		args := importArgsOf(t, rt, backend, id)
		if backend == "postgres" {
			require.NotZero(t, args.StagedFile, "staged for any worker")
			require.NotNil(t, args.Origin)
		} else {
			require.Zero(t, args.StagedFile)
			require.Nil(t, args.Origin)
		}
		run, err := rt.Wait(ctx, id, nil)
		require.NoError(t, err)
		require.Equal(t, state.RunCompleted, run.State)
		require.Equal(t, int64(2_000), run.Counts.Sent)
		require.NoDirExists(t, restored, "the staged copy was restored")
		require.Zero(t, stagedCount(t, rt), "the staged copy is deleted when the run ends")

		// Changed after it was queued: the run imports what was queued.
		other := contacts(t, t.TempDir(), 2_500, nil)
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: other, ListID: b.listID})
		require.NoError(t, err)
		bigger := contacts(t, t.TempDir(), 3_000, nil)
		require.NoError(t, os.Rename(bigger, other))
		run, err = rt.Wait(ctx, id, nil)
		require.NoError(t, err)
		require.Equal(t, state.RunCompleted, run.State)
		if backend == "postgres" {
			require.Equal(t, int64(2_500), run.Counts.Sent, "the rows staged")
			require.DirExists(t, restored, "restored from the staged copy")
		} else {
			require.Equal(t, int64(3_000), run.Counts.Sent, "SQLite reads the path as it is")
			return
		}

		// The staged copy deleted (an erasure deletes one that holds the address): the run
		// fails, though the file is still where it was queued, unchanged.
		kept := contacts(t, t.TempDir(), 1_000, nil)
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: kept, ListID: b.listID})
		require.NoError(t, err)
		require.NoError(t, rt.State().DeleteStaged(ctx, importArgsOf(t, rt, backend, id).StagedFile))
		run, err = rt.Wait(ctx, id, nil)
		require.Error(t, err)
		require.Contains(t, err.Error(), "the staged copy of "+kept+" is gone")
		require.Equal(t, state.RunFailed, run.State)
	})
}
