package jobs_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
)

// TestImportSpillsDuplicatesWithinBudget: a worker whose memory budget holds about a
// thousand addresses imports 20,000 rows whose addresses repeat ones far back; the run's
// duplicate set spills to the data directory's tmp folder a dozen times and finds every
// repeat: each counted once as a duplicate, each address once in the list. The folder is
// empty after the run.
func TestImportSpillsDuplicatesWithinBudget(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		b.cfg.MemoryBudget = 16 << 10
		const n = 20_000
		path := filepath.Join(t.TempDir(), "far.csv")
		f, err := os.Create(path)
		require.NoError(t, err)
		w := bufio.NewWriter(f)
		fmt.Fprintln(w, "E-post,Fornavn")
		distinct := map[int]bool{}
		for i := 1; i <= n; i++ {
			email := i
			if i%3 == 0 {
				email = i / 3 // a third of the rows repeat, or seem to, an address from far back
			}
			distinct[email] = true
			fmt.Fprintf(w, "person%d@example.com,Ola%d\n", email, i)
		}
		require.NoError(t, w.Flush())
		require.NoError(t, f.Close())

		rt := b.open(t)
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		run := waitRun(t, rt, id, err)
		require.Equal(t, int64(n), run.Counts.Read)
		require.Equal(t, int64(n-len(distinct)), run.Counts.Duplicates)
		require.Equal(t, int64(n), run.Counts.Sent, "duplicates = last sends the later rows again")
		require.Len(t, b.emu.ListSubscribers(b.listID), len(distinct))
		require.Contains(t, b.logs.String(), "duplicate e-mails spilled")
		entries, err := os.ReadDir(filepath.Join(b.cfg.DataDir, "tmp"))
		require.NoError(t, err, "the run made its folder")
		require.Empty(t, entries)
		require.False(t, strings.Contains(b.logs.String(), "spill file"), "no trouble with the file")
	})
}
