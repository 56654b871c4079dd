package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/subsync/subsync/internal/check"
)

// validateSharedDirs checks the form of Config.SharedDirs: absolute directories, none the
// root (which would declare every file shared). Whether they exist is each machine's to
// say: a machine without the shared storage stages what it imports, and a worker that cannot
// read a shared file fails its run naming the file (checkShared).
func validateSharedDirs(p *check.Problems, dirs []string) {
	for i, d := range dirs {
		key := fmt.Sprintf("SharedDirs[%d]", i)
		switch {
		case d == "":
			p.Add(key, "", "empty: want the directory of shared storage every worker reads at the same path")
		case !filepath.IsAbs(d):
			p.Add(key, d, "want an absolute path")
		case filepath.Dir(filepath.Clean(d)) == filepath.Clean(d):
			p.Add(key, d, "the root directory would declare every file shared: name the shared storage's directories")
		}
	}
}

// sharedPath says whether the file abs (an absolute path) lies under one of
// Config.SharedDirs, both with their symbolic links resolved (a link out of a shared
// directory is not under it), and returns the path every worker reads it at (the configured
// directory, joined with the file's place under it) and that directory.
func (rt *Runtime) sharedPath(abs string) (path, dir string, ok bool) {
	if len(rt.cfg.SharedDirs) == 0 {
		return "", "", false
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", "", false
	}
	for _, d := range rt.cfg.SharedDirs {
		realDir, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue // not on this machine: what it queues from there is staged
		}
		rel, err := filepath.Rel(realDir, real)
		if err != nil || rel == "." || !filepath.IsLocal(rel) {
			continue
		}
		return filepath.Join(filepath.Clean(d), rel), filepath.Clean(d), true
	}
	return "", "", false
}

// checkShared fails the run, for people, when the worker cannot read the file of an import
// queued without a copy (under a shared directory, or with --shared-path): the error names
// the file, why, and the setting that declared it readable by every worker.
func checkShared(args ImportArgs) error {
	f, err := os.Open(args.Path)
	if err == nil {
		return f.Close()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	why := "it was queued with --shared-path (ImportArgs.Shared)"
	if args.SharedDir != "" {
		why = fmt.Sprintf("it is under %s (database.shared_dirs)", args.SharedDir)
	}
	return permanent(fmt.Errorf("%s cannot be read on this worker: %w; the import was queued without a copy of the file because %s: every worker must read the shared storage at the same path",
		args.Path, err, why))
}

// warnSharedDirs says, when a worker starts, which of Config.SharedDirs it cannot read: the
// imports of files under them that it takes will fail.
func (rt *Runtime) warnSharedDirs(ctx context.Context) {
	for _, d := range rt.cfg.SharedDirs {
		f, err := os.Open(d)
		if err == nil {
			_, err = f.Readdirnames(1)
			_ = f.Close()
			if errors.Is(err, io.EOF) {
				err = nil
			}
		}
		if err != nil {
			rt.log.WarnContext(ctx, "a shared directory cannot be read on this worker: the imports of files under it that it takes will fail",
				slog.String("dir", d), slog.String("setting", "database.shared_dirs"), slog.Any("error", err))
		}
	}
}
