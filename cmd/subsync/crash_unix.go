//go:build unix

package main

import "syscall"

// noCoreFiles sets the soft core-file limit to zero; the hard limit stays, so an operator
// who wants a core can still raise it deliberately (prlimit) for one process.
func noCoreFiles() {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_CORE, &lim) != nil {
		return
	}
	lim.Cur = 0
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &lim)
}
