// Package codesize holds the test that keeps the engine's packages readable: no production
// file of jobs, internal/pipeline or state over 400 lines, no function over 80 (the
// developers' guide). It has no code of its own; run it with
//
//	go test ./internal/codesize
//
// and it names every file and function over its limit.
package codesize
