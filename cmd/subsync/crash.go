package main

import "runtime/debug"

// A Go fatal error (out of memory, a stack overflow, concurrent map writes) or an unrecovered
// panic makes the runtime exit with status 2, the status subsync keeps for "the configuration
// must be fixed, restarting cannot help" (cli.ExitUsage, RestartPreventExitStatus=2 in
// deploy/subsync.service). At the "crash" traceback level the runtime ends such a failure
// with SIGABRT instead, after the same stack trace, so a service manager sees a crash and
// restarts the worker. A core file would hold the API key and the data in memory, so the
// soft core limit is set to zero first (noCoreFiles, per platform).
//
// It is a package-level variable so that it is set before any init function of this
// package runs. A failure while the runtime itself starts (it cannot reserve its first
// memory under a tight `ulimit -v`) happens before any Go code and still exits 2.
var _ = func() bool {
	noCoreFiles()
	debug.SetTraceback("crash")
	return true
}()
