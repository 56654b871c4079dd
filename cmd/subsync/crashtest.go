//go:build crashtest

package main

import (
	"os"
	"runtime/debug"
	"sync"
)

// Built only with -tags crashtest (TestBinaryFatalErrorIsNotExitTwo): SUBSYNC_CRASHTEST
// makes the binary fail the way a bug would, before the command runs.
func init() {
	switch os.Getenv("SUBSYNC_CRASHTEST") {
	case "stack-overflow": // a runtime fatal error
		debug.SetMaxStack(8 << 20) // overflow at 8 MB, not the default 1 GB
		var recurse func(n int) int
		recurse = func(n int) int { return recurse(n+1) + 1 }
		recurse(0)
	case "panic-in-goroutine": // an unrecovered panic
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m map[string]int
			m["x"] = 1
		}()
		wg.Wait()
	}
}
