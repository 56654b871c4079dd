package jobs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// sharedMount makes a directory of "shared storage" and the name every worker reads it at
// (a symbolic link to it, as a mount point may be), configured as Config.SharedDirs.
func sharedMount(t *testing.T, b *bundle) (storage, mount string) {
	t.Helper()
	storage = t.TempDir()
	mount = filepath.Join(t.TempDir(), "share")
	require.NoError(t, os.Symlink(storage, mount))
	b.cfg.SharedDirs = []string{mount}
	return storage, mount
}

// stagedCount counts the staged files and chunks in the runtime's database.
func stagedCount(t *testing.T, rt *jobs.Runtime) int {
	t.Helper()
	var files, chunks int
	db := rt.State().DB()
	require.NoError(t, db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM subsync_staged_file").Scan(&files))
	require.NoError(t, db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM subsync_staged_chunk").Scan(&chunks))
	return files + chunks
}

// importArgsOf reads the arguments of a queued import from the queue (River keeps them as
// SQLite's binary JSON on SQLite).
func importArgsOf(t *testing.T, rt *jobs.Runtime, backend string, id int64) jobs.ImportArgs {
	t.Helper()
	q := "SELECT args FROM river_job WHERE id = $1"
	if backend == "sqlite" {
		q = "SELECT json(args) FROM river_job WHERE id = $1"
	}
	var raw []byte
	require.NoError(t, rt.State().DB().QueryRowContext(context.Background(), q, id).Scan(&raw))
	var args jobs.ImportArgs
	require.NoError(t, json.Unmarshal(raw, &args))
	return args
}

// TestImportUnderSharedDir (#34 point 1): a file under a configured shared directory is
// queued with the path every worker reads it at, not copied into the database: the staged
// tables stay empty, and the worker reads the file at that path when it runs.
func TestImportUnderSharedDir(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		storage, mount := sharedMount(t, b)
		rt := b.open(t)

		// Named by its path on this machine's storage: queued as every worker names it.
		path := contacts(t, storage, 2_500, nil)
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		require.Zero(t, stagedCount(t, rt), "nothing is staged")
		args := importArgsOf(t, rt, backend, id)
		require.Equal(t, filepath.Join(mount, "contacts-2500.csv"), args.Path)
		require.Equal(t, mount, args.SharedDir)
		require.Zero(t, args.StagedFile)

		// The file grows after it was queued: the worker reads it as it is then.
		bigger := contacts(t, t.TempDir(), 3_000, nil)
		require.NoError(t, os.Rename(bigger, path))
		run, err := rt.Wait(ctx, id, nil)
		require.NoError(t, err)
		require.Equal(t, state.RunCompleted, run.State)
		require.Equal(t, int64(3_000), run.Counts.Sent)
		require.Len(t, b.emu.ListSubscribers(b.listID), 3_000)
		require.Zero(t, stagedCount(t, rt))
	})
}

// TestImportOutsideSharedDirIsStaged: a file that only seems to be under a shared directory
// (a symbolic link out of it, a path climbing out with .., a directory whose name merely
// starts with the shared one's) is staged on Postgres as any local file is.
func TestImportOutsideSharedDirIsStaged(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		storage, mount := sharedMount(t, b)
		rt := b.open(t)

		outside := contacts(t, t.TempDir(), 10, nil)
		link := filepath.Join(storage, "link.csv")
		require.NoError(t, os.Symlink(outside, link))
		sibling := storage + "-other"
		require.NoError(t, os.Mkdir(sibling, 0o750))
		t.Cleanup(func() { _ = os.RemoveAll(sibling) })
		rel, err := filepath.Rel(filepath.Dir(mount), outside)
		require.NoError(t, err)
		for _, path := range []string{
			filepath.Join(mount, "link.csv"),
			mount + "/../" + rel, // the outside file
			contacts(t, sibling, 20, nil),
		} {
			id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
			require.NoError(t, err, path)
			args := importArgsOf(t, rt, backend, id)
			require.Empty(t, args.SharedDir, path)
			if backend == "postgres" {
				require.NotZero(t, args.StagedFile, "%s is staged", path)
			} else {
				require.Zero(t, args.StagedFile, "SQLite stages nothing: one machine")
			}
		}
		if backend == "postgres" {
			require.NotZero(t, stagedCount(t, rt))
		}
	})
}

// TestSharedFileUnreadableFailsTheRun: a worker that cannot read a file queued without a
// copy fails the run at once, naming the file and the setting that declared it shared.
func TestSharedFileUnreadableFailsTheRun(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		storage, mount := sharedMount(t, b)
		rt := b.open(t)

		path := contacts(t, storage, 10, nil)
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		require.NoError(t, os.Remove(path)) // the shared storage is not there for the worker
		run, err := rt.Wait(ctx, id, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Equal(t, state.RunFailed, run.State)
		require.Equal(t, 1, run.Attempts)
		shared := filepath.Join(mount, "contacts-10.csv")
		require.Equal(t, shared+" cannot be read on this worker: no such file or directory; the import was queued without a copy of the file because it is under "+
			mount+" (database.shared_dirs): every worker must read the shared storage at the same path", run.Error)

		// The same with --shared-path.
		other := filepath.Join(t.TempDir(), "gone.csv")
		require.NoError(t, os.WriteFile(other, []byte("E-post\nperson1@example.com\n"), 0o600))
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: other, ListID: b.listID, Shared: true})
		require.NoError(t, err)
		require.NoError(t, os.Remove(other))
		run, err = rt.Wait(ctx, id, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Contains(t, run.Error, other+" cannot be read on this worker: no such file or directory; the import was queued without a copy of the file because it was queued with --shared-path")
		require.Zero(t, stagedCount(t, rt))
	})
}

// TestSharedDirsValidated: Config.SharedDirs are absolute directories other than the root.
func TestSharedDirsValidated(t *testing.T) {
	t.Parallel()
	cfg := jobs.Config{DataDir: t.TempDir(), SharedDirs: []string{"/mnt/share", "share", "", "/"}}
	err := cfg.Validate()
	require.ErrorContains(t, err, `SharedDirs[1]: "share": want an absolute path`)
	require.ErrorContains(t, err, `SharedDirs[2]: empty: want the directory of shared storage`)
	require.ErrorContains(t, err, `SharedDirs[3]: "/": the root directory would declare every file shared`)
	require.NotContains(t, err.Error(), "SharedDirs[0]")
}

// TestWorkerWarnsOfUnreadableSharedDir: a worker that cannot read a shared directory says
// so when it starts, naming the directory and the setting.
func TestWorkerWarnsOfUnreadableSharedDir(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		b := setup(t, backend)
		_, mount := sharedMount(t, b)
		missing := filepath.Join(t.TempDir(), "not-mounted")
		b.cfg.SharedDirs = append(b.cfg.SharedDirs, missing)
		running(t, b.open(t))
		waitFor(t, time.Minute, "the worker to start", func() bool { return strings.Contains(b.logs.String(), "worker started") })
		logs := b.logs.String()
		require.Contains(t, logs, `level=WARN msg="a shared directory cannot be read on this worker: the imports of files under it that it takes will fail" dir=`+missing+` setting=database.shared_dirs error="open `+missing+`: no such file or directory"`)
		require.NotContains(t, logs, "dir="+mount)
	})
}
