package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// A run under way shows how far it came: by rows when their total is known, by the file's
// bytes while they tell (not once the whole file is read ahead of the rows sent), its rate and
// the time left; a run that ended, or that counts no rows, shows none.
func TestProgressOf(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 3, 1, 2, 30, 0, 0, time.UTC)
	now := start.Add(10 * time.Second)
	run := func(read, totalRows, bytes, totalBytes int64) state.Run {
		return state.Run{Kind: state.KindImport, State: state.RunRunning, StartedAt: start, UpdatedAt: now,
			Counts: state.Counts{Read: read}, TotalRows: totalRows, BytesDone: bytes, TotalBytes: totalBytes}
	}
	require.Equal(t, &runProgress{Done: 1000, Total: 4000, Percent: 25, Max: 4000, Value: 1000,
		Rate: "100 rows/s", Left: "about 30s left"}, progressOf(run(1000, 4000, 0, 0), now))
	require.Equal(t, &runProgress{Done: 1000, Percent: 50, Max: 200, Value: 100, Rate: "100 rows/s", Left: "about 10s left"},
		progressOf(run(1000, 0, 100, 200), now))
	require.Equal(t, &runProgress{Done: 1000, Percent: -1, Rate: "100 rows/s"}, progressOf(run(1000, 0, 200, 200), now),
		"the whole file read ahead: the share is not known")
	require.Equal(t, &runProgress{Total: 4000, Max: 4000}, progressOf(run(0, 4000, 0, 0), now))
	done := run(4000, 4000, 0, 0)
	done.State = state.RunCompleted
	require.Nil(t, progressOf(done, now))
	pull := run(12, 0, 0, 0)
	pull.Kind = state.KindStatusPull
	require.Nil(t, progressOf(pull, now))
}
