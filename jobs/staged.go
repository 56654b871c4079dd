package jobs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// EnqueueStaged queues the import of a file staged before (state.Store.StageFile, as a file
// uploaded on the import page is, on SQLite and Postgres alike): args.Path becomes the
// staged file's name, and the staged copy is deleted when the run ends, or now when the
// import cannot be queued.
func (rt *Runtime) EnqueueStaged(ctx context.Context, args ImportArgs, staged state.StagedFile) (int64, error) {
	args.Path, args.Source, args.Shared, args.SharedDir, args.StagedFile = staged.Name, "", false, "", staged.ID
	if err := rt.checkImport(args); err != nil {
		_ = rt.store.DeleteStaged(context.WithoutCancel(ctx), staged.ID)
		return 0, err
	}
	return rt.insertImport(ctx, args)
}

// restoreStaged copies the staged file id to a temporary file in the data directory (its
// staged folder), whose name ends in the original name (its extension tells the file's
// kind); cleanup removes it.
func (rt *Runtime) restoreStaged(ctx context.Context, id int64, name, prefix string) (string, func(), error) {
	path, cleanup, err := rt.stagedTemp(name, prefix, func(f *os.File) error {
		_, err := rt.store.RestoreStaged(ctx, id, f)
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("restore staged file: %w", err)
	}
	return path, cleanup, nil
}

// stagedTemp writes a temporary file in the data directory's staged folder, named prefix,
// a random part and the base of name, with fill; cleanup removes it. When fill fails the
// file is removed and its error returned.
func (rt *Runtime) stagedTemp(name, prefix string, fill func(*os.File) error) (string, func(), error) {
	dir, err := stagedDir(rt.cfg.DataDir)
	if err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp(dir, prefix+"-*-"+filepath.Base(name))
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.Remove(f.Name()) }
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return f.Name(), cleanup, nil
}

// stagedDir makes (if needed) and returns the staged folder of the data directory dataDir
// (the system's temporary directory when empty), where staged files are restored.
func stagedDir(dataDir string) (string, error) {
	dir := filepath.Join(cmpDir(dataDir), "staged")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	return dir, nil
}

// RestoreStaged is restoreStaged for the pages: a local copy of a staged file (an upload) to
// read, and the function that removes it.
func (rt *Runtime) RestoreStaged(ctx context.Context, f state.StagedFile) (string, func(), error) {
	return rt.restoreStaged(ctx, f.ID, f.Name, "upload")
}

// ErrNoSuchList: the service answered that it has no such list.
var ErrNoSuchList = errors.New("the service has no such list")

// CheckList asks the service once whether it has the list: nil when it has, an error wrapping
// ErrNoSuchList when it answers 404, another error when it cannot be asked (no credentials
// here, the service unreachable).
func (rt *Runtime) CheckList(ctx context.Context, listID int64) error {
	if rt.sinkErr != nil {
		return fmt.Errorf("subscriber service client: %w", rt.sinkErr)
	}
	_, err := rt.sink.List(ctx, listID)
	var apiErr *sink.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound:
		return fmt.Errorf("list %d: %w", listID, ErrNoSuchList)
	}
	return fmt.Errorf("check list %d: %w", listID, err)
}

// Lists are the service's lists (for the import page's choice of list).
func (rt *Runtime) Lists(ctx context.Context) ([]sink.List, error) {
	if rt.sinkErr != nil {
		return nil, fmt.Errorf("subscriber service client: %w", rt.sinkErr)
	}
	return rt.sink.Lists(ctx)
}
