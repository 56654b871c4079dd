package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// UploadTTL is how long a file uploaded on the import page waits for its import before it is
// deleted.
const UploadTTL = 24 * time.Hour

// ErrNotImportable: an uploaded file is not one an import can read (an Excel 97-2003
// workbook, a file whose content is not what its name says).
var ErrNotImportable = errors.New("not a file subsync can import")

// StageUpload stages a file uploaded on the import page, as `subsync import` stages a file on
// Postgres, on SQLite and Postgres alike: it is copied to a local file first (a slow upload
// holds no transaction), checked as the command line checks a file (an Excel 97-2003 workbook
// is refused; the content must be CSV text or an .xlsx workbook, as the name says), staged
// into the database, and marked an upload waiting for its import for UploadTTL. Uploads that
// waited past theirs are deleted now.
func (rt *Runtime) StageUpload(ctx context.Context, name string, r io.Reader) (state.StagedFile, error) {
	name = uploadName(name)
	if n, err := rt.store.DeleteExpiredUploads(ctx); err != nil {
		rt.log.WarnContext(ctx, "could not delete expired uploads", slog.Any("error", err))
	} else if n > 0 {
		rt.log.InfoContext(ctx, "deleted uploads never imported", slog.Int("uploads", n))
	}
	if strings.EqualFold(filepath.Ext(name), ".xls") {
		return state.StagedFile{}, fmt.Errorf("%s: %w: an Excel 97-2003 workbook (.xls) is not supported: save it as .xlsx or CSV", name, ErrNotImportable)
	}
	dir, err := stagedDir(rt.cfg.DataDir)
	if err != nil {
		return state.StagedFile{}, fmt.Errorf("receive %s: %w", name, err)
	}
	f, err := os.CreateTemp(dir, "upload-*-"+name)
	if err != nil {
		return state.StagedFile{}, fmt.Errorf("receive %s: %w", name, err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return state.StagedFile{}, fmt.Errorf("receive %s: %w", name, err)
	}
	if _, err := sources.KindOf(f.Name()); err != nil {
		return state.StagedFile{}, fmt.Errorf("%s: %w: %s", name, ErrNotImportable, strings.TrimPrefix(err.Error(), "open "+f.Name()+": "))
	}
	in, err := os.Open(f.Name())
	if err != nil {
		return state.StagedFile{}, fmt.Errorf("stage %s: %w", name, err)
	}
	defer in.Close()
	staged, err := rt.store.StageFile(ctx, name, in)
	if err != nil {
		return state.StagedFile{}, fmt.Errorf("stage %s: %w", name, err)
	}
	if err := rt.store.MarkUpload(ctx, staged.ID, UploadTTL); err != nil {
		_ = rt.store.DeleteStaged(context.WithoutCancel(ctx), staged.ID)
		return state.StagedFile{}, err
	}
	return staged, nil
}

// uploadName is the base name of an uploaded file as a browser sent it, without a path,
// control characters or more than 120 characters; "upload" when nothing is left.
func uploadName(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, `\`, "/"))
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '/' {
			return -1
		}
		return r
	}, name)
	if r := []rune(name); len(r) > 120 {
		ext := filepath.Ext(name)
		name = string(r[:120-len([]rune(ext))]) + ext
	}
	if name == "" || name == "." || name == ".." {
		return "upload"
	}
	return name
}

func cmpDir(dir string) string {
	if dir == "" {
		return os.TempDir()
	}
	return dir
}

// CustomFields are the service's custom fields (the import page offers them as targets).
func (rt *Runtime) CustomFields(ctx context.Context) ([]sink.CustomField, error) {
	if rt.sinkErr != nil {
		return nil, fmt.Errorf("subscriber service client: %w", rt.sinkErr)
	}
	return rt.sink.CustomFields(ctx)
}

// tempDir is where a run's sets spill beyond Config.MemoryBudget: the data directory's tmp
// folder (the run creates it when it first spills, and removes its files when it ends).
func (rt *Runtime) tempDir() string {
	return filepath.Join(cmpDir(rt.cfg.DataDir), "tmp")
}
