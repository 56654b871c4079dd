//go:build unix

package sinktest

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) this process has used, on every thread:
// the collector's included. Unlike the wall time it does not count waiting for a shared core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
