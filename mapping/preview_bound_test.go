package mapping

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/spillset"
	"github.com/subsync/subsync/internal/testdisk"
)

// TestPreviewDuplicatesWithinBudget: a preview reads the whole file, and its set of the
// e-mails read keeps to PreviewOptions.MemoryBudget as a run's does: at the smallest budget
// it counts every repeat of an address from far back; with its folder on a full disk it
// fails saying so, where an unbounded set would hold every address in memory.
func TestPreviewDuplicatesWithinBudget(t *testing.T) {
	t.Parallel()
	const n = 40_000
	var b strings.Builder
	b.WriteString("E-post\n")
	distinct := map[int]bool{}
	for i := 1; i <= n; i++ {
		email := i
		if i%4 == 0 {
			email = i / 4
		}
		distinct[email] = true
		fmt.Fprintf(&b, "p%d@example.com\n", email)
	}
	m := mustCompile(t, "[columns]\n\"E-post\" = \"email\"\n", []string{"E-post"}, Fields{})
	ctx := context.Background()

	opts := PreviewOptions{Rows: -1, MemoryBudget: spillset.MinBudget, TempDir: t.TempDir()}
	stats, err := Preview(ctx, io.Discard, newCSVReader(t, b.String()), m, opts)
	require.NoError(t, err)
	require.Equal(t, int64(n-len(distinct)), stats.Duplicates)
	require.Equal(t, int64(n), stats.Rows)

	opts.TempDir = testdisk.Small(t, 1<<20)
	testdisk.Fill(t, opts.TempDir, 0)
	_, err = Preview(ctx, io.Discard, newCSVReader(t, b.String()), m, opts)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorContains(t, err, "preview: row ")
	require.ErrorContains(t, err, "duplicate e-mails: spill the e-mail hashes beyond the memory budget (16384 bytes) to "+opts.TempDir)
}
