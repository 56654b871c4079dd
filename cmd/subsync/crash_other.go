//go:build !unix

package main

func noCoreFiles() {}
