package jobs_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// TestWorksItsOwnStagedCopy (#34): on the Postgres queue the worker that staged a file (a
// `subsync import` with no other worker running) works the job from a copy of the file it
// read, and does not read the file back from the database: the import completes even when
// the staged chunks no longer decompress. The copy is gone once the run ends.
func TestWorksItsOwnStagedCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "postgres")
	rt := b.open(t)
	const n = 3000
	path := contacts(t, t.TempDir(), n, nil)

	id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
	require.NoError(t, err)
	_, err = rt.State().DB().ExecContext(ctx, "UPDATE subsync_staged_chunk SET data = $1", []byte("not a zstd frame"))
	require.NoError(t, err)

	wctx, cancel := context.WithTimeout(ctx, time.Minute) // without its copy the run retries the restore
	defer cancel()
	run, err := rt.Wait(wctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, state.RunCompleted, run.State)
	require.Equal(t, int64(n), run.Counts.Sent)
	require.Len(t, b.emu.ListSubscribers(b.listID), n)
	require.Empty(t, stagedFiles(t, b.cfg.DataDir), "the copy is removed when the run ends")
	require.Zero(t, stagedCount(t, rt), "the staged copy in the database is deleted too")
}

// TestNoStagedCopyLeftBehind (#34): a process that staged a file and did not run its job
// (another worker took it) keeps no copy of it on its disk, while it keeps running.
func TestNoStagedCopyLeftBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "postgres")
	enqueuer := b.open(t)
	other := b.cfg
	other.DataDir = t.TempDir()
	worker := b.openWith(t, other)
	path := contacts(t, t.TempDir(), 500, nil)

	id, err := enqueuer.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
	require.NoError(t, err)
	run, err := worker.Wait(ctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, state.RunCompleted, run.State)
	require.Empty(t, stagedFiles(t, b.cfg.DataDir), "the process that staged the file holds no copy of it")
	require.Empty(t, stagedFiles(t, other.DataDir), "the worker removed what it restored")
}

// TestStagedFileChangedBeforeItsRun (#34): a file changed after it was staged is imported as
// it was staged, also by the process that staged it (it reads the file again only when it
// still holds the bytes staged).
func TestStagedFileChangedBeforeItsRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "postgres")
	rt := b.open(t)
	path := contacts(t, t.TempDir(), 400, nil)
	id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("E-post,Fornavn,Etternavn\nlater@example.com,Kari,Nordmann\n"), 0o600))

	run, err := rt.Wait(ctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, state.RunCompleted, run.State)
	require.Equal(t, int64(400), run.Counts.Sent)
	require.Len(t, b.emu.ListSubscribers(b.listID), 400)
	require.Empty(t, stagedFiles(t, b.cfg.DataDir))
}

// stagedFiles lists the files in the data directory's staged folder.
func stagedFiles(t *testing.T, dataDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "staged"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
