//go:build unix

package sources

import (
	"errors"
	"os"
	"syscall"
)

// canLock is true: readers lock their directories, and stale ones are removed.
const canLock = true

// tryLock takes an exclusive lock on f without waiting; false when another holds it.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
