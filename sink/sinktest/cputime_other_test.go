//go:build !unix

package sinktest

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
