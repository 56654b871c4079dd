package sources

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A reader unpacks into a temporary directory of its own (excelize writes large parts
// there) and removes it on Close. A run that is killed cannot, so every OpenXLSX first
// removes the directories that killed runs left behind: each directory holds a lock file
// that its reader keeps locked (flock) while it is open; the kernel drops the lock when the
// process dies, so a directory whose lock can be taken belongs to nobody.

// tmpPrefix starts the name of every reader's temporary directory.
const tmpPrefix = "subsync-xlsx-"

// tmpLock is the lock file in a reader's temporary directory.
const tmpLock = ".lock"

// unlockedAge is how old a directory without a lock file (left by an older subsync) must be
// before it is removed.
const unlockedAge = time.Hour

// makeTempDir creates a reader's temporary directory in parent ("" = os.TempDir()) and
// locks it; the lock is held until the returned file is closed.
func makeTempDir(parent string) (string, *os.File, error) {
	removeStaleTempDirs(parent)
	dir, err := os.MkdirTemp(parent, tmpPrefix)
	if err != nil {
		return "", nil, err
	}
	if !canLock {
		return dir, nil, nil
	}
	lock, err := os.OpenFile(filepath.Join(dir, tmpLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		var ok bool
		if ok, err = tryLock(lock); err == nil && !ok {
			err = errors.New("locked by another process")
		}
		if err != nil {
			_ = lock.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return dir, lock, nil
}

// removeStaleTempDirs removes the temporary directories of readers that are gone. It does
// what it can: a directory it cannot examine or remove is left for the next time.
func removeStaleTempDirs(parent string) {
	if !canLock {
		return
	}
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		lock, err := os.OpenFile(filepath.Join(dir, tmpLock), os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > unlockedAge {
				_ = os.RemoveAll(dir)
			}
			continue
		}
		if err != nil {
			continue
		}
		if ok, err := tryLock(lock); err == nil && ok {
			_ = os.RemoveAll(dir)
		}
		_ = lock.Close()
	}
}
