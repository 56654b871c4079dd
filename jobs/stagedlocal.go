package jobs

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/subsync/subsync/state"
)

// stagedHere remembers the files this process staged (EnqueueImport on Postgres): where it
// read them, how many bytes and their hash. A run of such a file on this process copies it
// from there, checking it still holds the bytes staged, instead of reading it back from the
// database and decompressing it (localCopy); a worker elsewhere, or a file changed since,
// restores the staged copy. It keeps no file, only these few bytes, for at most
// maxStagedHere files (the oldest are forgotten: their runs restore).
type stagedHere struct {
	seedOnce sync.Once
	seed     maphash.Seed

	mu    sync.Mutex
	files map[int64]stagedOrigin
	order []int64 // the staged files, oldest first
}

const maxStagedHere = 256

type stagedOrigin struct {
	path string
	size int64
	sum  uint64
}

// remember records that staged file id holds the size bytes, of hash sum, read at path.
func (h *stagedHere) remember(id int64, o stagedOrigin) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.files == nil {
		h.files = map[int64]stagedOrigin{}
	}
	if len(h.order) == maxStagedHere {
		delete(h.files, h.order[0])
		h.order = h.order[1:]
	}
	h.files[id] = o
	h.order = append(h.order, id)
}

// take returns (and forgets) where staged file id was read, if this process staged it.
func (h *stagedHere) take(id int64) (stagedOrigin, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.files[id]
	if ok {
		delete(h.files, id)
		if i := indexOf(h.order, id); i >= 0 {
			h.order = append(h.order[:i], h.order[i+1:]...)
		}
	}
	return o, ok
}

func indexOf(ids []int64, id int64) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// hasher returns a hash of what this process stages (maphash, with the seed of the process).
func (h *stagedHere) hasher() *maphash.Hash {
	h.seedOnce.Do(func() { h.seed = maphash.MakeSeed() })
	var m maphash.Hash
	m.SetSeed(h.seed)
	return &m
}

// stageFile stages the file at path (state.Store.StageFile), hashing it as it is read, and
// remembers it (stagedHere).
func (rt *Runtime) stageFile(ctx context.Context, path string) (state.StagedFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return state.StagedFile{}, err
	}
	defer f.Close()
	sum := rt.here.hasher()
	staged, err := rt.store.StageFile(ctx, filepath.Base(path), io.TeeReader(f, sum))
	if err != nil {
		return staged, err
	}
	rt.here.remember(staged.ID, stagedOrigin{path: path, size: staged.Size, sum: sum.Sum64()})
	return staged, nil
}

// errChanged: the file a process staged no longer holds the bytes staged.
var errChanged = errors.New("the file changed since it was staged")

// localCopy copies the file staged file id was read from, if this process staged it, into a
// temporary file of the data directory's staged folder (as restoreStaged does), checking
// that it still holds the bytes staged; ok is false when it did not stage it, or the file
// moved or changed (then the caller restores the staged copy).
func (rt *Runtime) localCopy(id int64, name, prefix string) (path string, cleanup func(), ok bool, err error) {
	o, staged := rt.here.take(id)
	if !staged {
		return "", nil, false, nil
	}
	src, err := os.Open(o.path)
	if err != nil {
		return "", nil, false, nil // moved or removed since: restore
	}
	defer src.Close()
	path, cleanup, err = rt.stagedTemp(name, prefix, func(dst *os.File) error {
		sum := rt.here.hasher()
		n, err := io.Copy(io.MultiWriter(dst, sum), io.LimitReader(src, o.size+1))
		if err == nil && (n != o.size || sum.Sum64() != o.sum) {
			err = errChanged
		}
		return err
	})
	switch {
	case errors.Is(err, errChanged):
		return "", nil, false, nil
	case err != nil:
		return "", nil, false, fmt.Errorf("copy staged file: %w", err)
	}
	return path, cleanup, true, nil
}
