package jobs_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/state"
)

// TestSnoozesKeepDuplicatesCounted (#35 point 8): an import of 20,000 rows of which 540 repeat
// the address of the row before, snoozed twice on the service's 429s (Retry-After past what
// the worker waits), has the books of the same import without faults: each duplicate counted
// once. A duplicate sent in a batch acknowledged above the checkpoint when the attempt ended
// was not counted: the resumed attempt reads such rows for their e-mails only.
func TestSnoozesKeepDuplicatesCounted(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		normal := sinktest.Faults{Latency: 40 * time.Millisecond}
		b := setup(t, backend, sinktest.WithFaults(normal))
		b.cfg.Sink.RetryAfterCap = 500 * time.Millisecond
		const n = 20_000
		dup := func(i int) bool { return i%37 == 0 }
		path := filepath.Join(t.TempDir(), "dups.csv")
		f, err := os.Create(path)
		require.NoError(t, err)
		w := bufio.NewWriter(f)
		fmt.Fprintln(w, "E-post,Fornavn")
		dups := 0
		for i := 1; i <= n; i++ {
			email := i
			if dup(i) {
				email, dups = i-1, dups+1
			}
			fmt.Fprintf(w, "person%d@example.com,Ola%d\n", email, i)
		}
		require.NoError(t, w.Flush())
		require.NoError(t, f.Close())

		rt := b.open(t)
		// The books of the same import without faults, into a list of its own.
		calm := b.emu.CreateList("Uten feil")
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: calm})
		want := waitRun(t, rt, id, err).Counts
		require.Equal(t, int64(dups), want.Duplicates)

		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		wk := startWorker(t, b)
		waitFor(t, time.Minute, "5,000 rows sent", func() bool { return sentRows(b.emu, b.listID) >= 5_000 })
		snooze(t, b, rt.State(), jobID, normal)
		waitFor(t, time.Minute, "12,000 rows sent", func() bool { return sentRows(b.emu, b.listID) >= 12_000 })
		snooze(t, b, rt.State(), jobID, normal)
		waitFor(t, 2*time.Minute, "the run to complete", func() bool {
			return runOf(t, rt.State(), jobID).State == state.RunCompleted
		})
		wk.stop(t, 30*time.Second)
		run := runOf(t, rt.State(), jobID)
		require.GreaterOrEqual(t, run.Attempts, 3, "two snoozes")
		require.Equal(t, int64(n), run.Counts.Read)
		require.Equal(t, int64(dups), run.Counts.Duplicates, "each duplicate counted once")
		require.Equal(t, want.Sent, run.Counts.Sent)
		require.Equal(t, want.Rejected, run.Counts.Rejected)
		require.Len(t, b.emu.ListSubscribers(b.listID), n-dups)
	})
}
