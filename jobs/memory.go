package jobs

import (
	"os"
	"runtime/debug"
)

// GCPercentDefault is the garbage collector's target (GOGC) a subsync process runs with
// unless the GOGC environment variable sets one: the heap may grow to 1.5 times what was live
// after the last collection, where Go's default (100) lets it double.
//
// Most of what a large run keeps live holds no pointers (the e-mail hashes of the duplicate
// check, the delta fingerprints), so a collection scans little and collecting twice as often
// costs little CPU, while the peak resident set of a 1,000,000-row import drops by about a
// fifth (docs/performance.md).
const GCPercentDefault = 50

// TuneGC sets the garbage collector's target to GCPercentDefault unless GOGC is set in the
// environment. The binary calls it at start.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercentDefault)
	}
}
