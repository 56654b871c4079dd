package jobs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestPastTheStrayLimit: 151 Windows-1252 rows in a file of 3,000 UTF-8 rows with æøå (past
// the 100 stray lines) is still delivered as UTF-8, every name intact, and the run says which
// values were read as Windows-1252; a file with over 100 rows of each cannot be told: its
// import fails at the first attempt, saying how to set the encoding (#35 point 9). Both queues.
func TestPastTheStrayLimit(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, utf8, cp1252 int) string {
		var sb strings.Builder
		sb.WriteString("E-post,Fornavn\n")
		for i := 1; i <= utf8; i++ {
			fmt.Fprintf(&sb, "p%d@example.com,Bjørn\n", i)
		}
		for i := 1; i <= cp1252; i++ {
			fmt.Fprintf(&sb, "w%d@example.com,J\xf8rgen\n", i)
		}
		path := filepath.Join(t.TempDir(), "mixed.csv")
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o600))
		return path
	}
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		rt := b.open(t)
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: write(t, 3000, 151), ListID: b.listID})
		run := waitRun(t, rt, id, err)
		require.Equal(t, state.RunCompleted, run.State)
		require.Equal(t, int64(3151), run.Counts.Sent)
		for email, want := range map[string]string{"p1@example.com": "Bjørn", "p3000@example.com": "Bjørn",
			"w1@example.com": "Jørgen", "w151@example.com": "Jørgen"} {
			s, ok := b.emu.SubscriberByEmail(email)
			require.True(t, ok)
			require.Equal(t, want, s.Fields["firstname"], email)
		}
		require.Contains(t, run.Error, "151 values that were not valid UTF-8 were read as Windows-1252")
		require.Contains(t, run.Error, "lines 3002, 3003")

		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: write(t, 300, 400), ListID: b.listID})
		require.NoError(t, err)
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		run, err = rt.Wait(waitCtx, id, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Equal(t, 1, run.Attempts)
		require.Contains(t, run.Error, "the file mixes encodings: 300 lines hold UTF-8 letters (the first is line 2)")
	})
}
