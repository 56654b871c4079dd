package jobs_test

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
)

// TestTuneGC: the process collects at GCPercentDefault unless GOGC says otherwise, so a user's
// GOGC always wins. Not parallel: it sets the process's GC target and environment.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	t.Setenv("GOGC", "")
	jobs.TuneGC()
	require.Equal(t, jobs.GCPercentDefault, debug.SetGCPercent(100))

	t.Setenv("GOGC", "80") // read by the runtime at start, as if the process started with it
	debug.SetGCPercent(80)
	jobs.TuneGC()
	require.Equal(t, 80, debug.SetGCPercent(100), "GOGC in the environment wins")
}
