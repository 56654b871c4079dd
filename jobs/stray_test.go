package jobs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// TestStrayLineWarnedInRunLog: a UTF-8 file with one Windows-1252 row is delivered as UTF-8,
// the stray row decoded, and the run's log names the line.
func TestStrayLineWarnedInRunLog(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		path := filepath.Join(t.TempDir(), "mixed.csv")
		var sb strings.Builder
		sb.WriteString("E-post,Fornavn\n")
		for i := 1; i <= 200; i++ {
			fmt.Fprintf(&sb, "p%d@example.com,Bjørn\n", i)
		}
		sb.WriteString("last@example.com,J\xf8rgen\n")
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o600))
		rt := b.open(t)
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		run := waitRun(t, rt, id, err)
		require.Equal(t, int64(201), run.Counts.Sent)
		for email, want := range map[string]string{"p1@example.com": "Bjørn", "last@example.com": "Jørgen"} {
			s, ok := b.emu.SubscriberByEmail(email)
			require.True(t, ok)
			require.Equal(t, want, s.Fields["firstname"])
		}
		require.Contains(t, b.logs.String(), "values that were not valid UTF-8 were read as Windows-1252")
		require.Contains(t, b.logs.String(), "lines=[202]")
		// The run's summary says so too (runs ID, the pages), not only the log.
		require.Equal(t, state.RunCompleted, run.State)
		require.Contains(t, run.Error, "1 value that was not valid UTF-8 was read as Windows-1252")
		require.Contains(t, run.Error, "line 202")
	})
}
