package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/riverqueue/river"

	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// Job kinds. They are stored in the queue: never rename them.
const (
	KindImport     = state.KindImport
	KindSync       = state.KindSync
	KindStatusPull = state.KindStatusPull
)

// ImportArgs are the arguments of a one-off import job: a file (CSV or XLSX) or a named
// database source, into one list, with a mapping. They carry names, paths and list ids,
// never a secret: the worker takes credentials and DSNs from its own configuration.
type ImportArgs struct {
	// Path is the file to import. On Postgres, EnqueueImport stages it into the database
	// unless Shared is set or it is under one of Config.SharedDirs; the path then only
	// names it.
	Path string `json:"path,omitempty"`
	// Shared declares Path readable by every worker (a shared volume): it is not staged.
	Shared bool `json:"shared,omitempty"`
	// SharedDir is the directory of Config.SharedDirs that Path is under, set by
	// EnqueueImport when it queues the file without a copy for that reason.
	SharedDir string `json:"shared_dir,omitempty"`
	// StagedFile is the staged copy of Path, set by EnqueueImport.
	StagedFile int64 `json:"staged_file,omitempty"`
	// Format is csv or xlsx; empty = from the file's name and content.
	Format string `json:"format,omitempty"`
	// Encoding, Delimiter, Sheet, SheetIndex and HeaderRow are as in sources.Config.
	Encoding   string `json:"encoding,omitempty"`
	Delimiter  string `json:"delimiter,omitempty"`
	Sheet      string `json:"sheet,omitempty"`
	SheetIndex int    `json:"sheet_index,omitempty"`
	HeaderRow  int    `json:"header_row,omitempty"`
	// Source names a database source of the worker's configuration (Config.Sources), instead
	// of a file.
	Source string `json:"source,omitempty"`
	// ListID is the list the rows go to.
	ListID int64 `json:"list_id"`
	// Mapping maps the columns; nil = by column names.
	Mapping *mapping.Spec `json:"mapping,omitempty"`
	// Tag is bulkinsert's tag mode: replace (default) or merge.
	Tag string `json:"tag,omitempty"`
	// Suppression is the suppression policy: pipeline.SuppressionSkip (default) or
	// pipeline.SuppressionUpdateKeepStatus.
	Suppression string `json:"suppression,omitempty"`
}

// Kind is the job kind.
func (ImportArgs) Kind() string { return KindImport }

func (a ImportArgs) describe() runDesc {
	d := runDesc{kind: KindImport, listID: a.ListID, name: a.Source, source: "source " + a.Source}
	if a.Path != "" {
		d.name, d.source = filepath.Base(a.Path), a.Path
	}
	return d
}

// EnqueueImport queues an import and returns its job id. A relative path is made absolute.
// On Postgres a local file is staged into the database (compressed, in chunks) so that any
// worker can read it, unless args.Shared or the file is under one of Config.SharedDirs
// (then its path is queued as every worker reads it); the staged copy is deleted when the
// run ends.
func (rt *Runtime) EnqueueImport(ctx context.Context, args ImportArgs) (int64, error) {
	if err := rt.checkImport(args); err != nil {
		return 0, err
	}
	args.StagedFile, args.SharedDir = 0, ""
	if args.Path != "" {
		abs, err := filepath.Abs(args.Path)
		if err != nil {
			return 0, fmt.Errorf("import %s: %w", args.Path, err)
		}
		args.Path = abs
		if _, err := os.Stat(abs); err != nil {
			return 0, fmt.Errorf("import: %w", err)
		}
		if path, dir, ok := rt.sharedPath(abs); ok && !args.Shared {
			args.Path, args.SharedDir = path, dir
		}
		if rt.db.dialect == state.Postgres && !args.Shared && args.SharedDir == "" {
			staged, err := rt.stageFile(ctx, abs)
			if err != nil {
				return 0, fmt.Errorf("import: stage %s: %w", abs, err)
			}
			args.StagedFile = staged.ID
		}
	}
	return rt.insertImport(ctx, args)
}

// ErrUnknownSource: an import names a source the configuration does not have.
var ErrUnknownSource = errors.New("not in the configuration")

// CheckSource says whether the configuration has the database source name: nil, or an error
// wrapping ErrUnknownSource.
func (rt *Runtime) CheckSource(name string) error {
	if _, ok := rt.cfg.Sources[name]; !ok {
		return fmt.Errorf("source %q is %w", name, ErrUnknownSource)
	}
	return nil
}

// checkImport refuses an import the job could not run.
func (rt *Runtime) checkImport(args ImportArgs) error {
	if args.ListID <= 0 {
		return errors.New("import: a list id is required")
	}
	if (args.Path == "") == (args.Source == "") {
		return errors.New("import: give either a file or a source name")
	}
	if err := pipeline.CheckSuppression(args.Suppression); err != nil {
		return fmt.Errorf("import: suppression %q: %w", args.Suppression, err)
	}
	if args.Source != "" {
		if _, ok := rt.cfg.Sources[args.Source]; !ok {
			return fmt.Errorf("import: source %q is %w", args.Source, ErrUnknownSource)
		}
	}
	return nil
}

// insertImport queues the job; when it cannot, its staged file goes.
func (rt *Runtime) insertImport(ctx context.Context, args ImportArgs) (int64, error) {
	if args.Suppression == "" {
		args.Suppression = pipeline.SuppressionSkip
	}
	res, err := rt.q.Insert(ctx, args, nil)
	if err != nil {
		if args.StagedFile != 0 {
			_ = rt.store.DeleteStaged(context.WithoutCancel(ctx), args.StagedFile)
		}
		return 0, fmt.Errorf("queue import: %w", err)
	}
	return res.Job.ID, nil
}

// ImportWorker works import jobs.
type ImportWorker struct {
	river.WorkerDefaults[ImportArgs]
	rt *Runtime
}

// Timeout: an import runs as long as it needs; a dead worker is detected by its lease.
func (w *ImportWorker) Timeout(*river.Job[ImportArgs]) time.Duration { return -1 }

// Work imports the file or source of the job, resuming from the run's checkpoint.
func (w *ImportWorker) Work(ctx context.Context, job *river.Job[ImportArgs]) error {
	args := job.Args
	return w.rt.work(ctx, job.JobRow, args.describe(), func(ctx context.Context, a *attempt) error {
		src, cleanup, err := w.rt.importSource(ctx, args, a)
		if err != nil {
			return err
		}
		defer cleanup()
		_, err = w.rt.stream(ctx, a, streamSpec{source: src, listID: args.ListID, mapping: args.Mapping,
			tag: args.Tag, suppression: args.Suppression})
		return err
	})
}

// importSource resolves the job's source: a named database source, a staged file restored
// to a local temporary file, or the path itself.
func (rt *Runtime) importSource(ctx context.Context, args ImportArgs, a *attempt) (sources.Config, func(), error) {
	nop := func() {}
	if args.Source != "" {
		src, ok := rt.cfg.Sources[args.Source]
		if !ok {
			return sources.Config{}, nop, permanent(fmt.Errorf("source %q is not in this worker's configuration", args.Source))
		}
		return src, nop, nil
	}
	src := sources.Config{Kind: args.Format, Path: args.Path, Encoding: args.Encoding, Delimiter: args.Delimiter,
		Sheet: args.Sheet, SheetIndex: args.SheetIndex, HeaderRow: args.HeaderRow}
	if args.StagedFile == 0 {
		if args.Shared || args.SharedDir != "" {
			return src, nop, checkShared(args)
		}
		return src, nop, nil
	}
	a.onFinal = append(a.onFinal, func(ctx context.Context) {
		if err := rt.store.DeleteStaged(ctx, args.StagedFile); err != nil {
			a.log.WarnContext(ctx, "could not delete the staged file", slog.Any("error", err))
		}
	})
	prefix := "job" + strconv.FormatInt(a.job.ID, 10)
	path, cleanup, ok, err := rt.localCopy(args.StagedFile, args.Path, prefix)
	if !ok && err == nil {
		path, cleanup, err = rt.restoreStaged(ctx, args.StagedFile, args.Path, prefix)
	}
	if errors.Is(err, state.ErrNotFound) {
		return src, nop, permanent(fmt.Errorf("the staged copy of %s is gone (deleted after an earlier run ended?)", args.Path))
	}
	if err != nil {
		return src, nop, err
	}
	src.Path = path
	return src, cleanup, nil
}
