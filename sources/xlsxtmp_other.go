//go:build !unix

package sources

import "os"

// canLock is false: without flock, directories are neither locked nor taken for stale.
const canLock = false

func tryLock(*os.File) (bool, error) { return false, nil }
