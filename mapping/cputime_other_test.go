//go:build !unix

package mapping

import "time"

// cpuTime is not measured here: the benchmark then reports wall-clock figures only.
func cpuTime() time.Duration { return 0 }
