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
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/state"
)

// TestEveryRowRefusedFails: an import whose every row the service refuses (a service that
// takes consent only as true or false, and a file whose every row gives one) fails, with the
// service's answer, instead of completing with 100% rejects; one row that goes through makes
// it a completed run with rejects.
func TestEveryRowRefusedFails(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend, sinktest.WithConsentBooleans(true), sinktest.WithRowMessages(true))
		var sb strings.Builder
		sb.WriteString("E-post,SAMTYKKEEPOST\n")
		for i := 1; i <= 5; i++ {
			fmt.Fprintf(&sb, "person%d@example.com,ja\n", i)
		}
		path := filepath.Join(t.TempDir(), "consent.csv")
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o600))
		rt := b.open(t)
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		run, err := rt.Wait(ctx, id, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Equal(t, state.RunFailed, run.State)
		require.Equal(t, 1, run.Attempts, "the same rows would be refused again")
		require.Equal(t, int64(5), run.Counts.Rejected)
		require.Zero(t, run.Counts.Sent)
		require.Contains(t, run.Error, "the service refused every row it was sent (5 rows, none accepted)")
		require.Contains(t, run.Error, "SAMTYKKEEPOST must be true or false", "the service's answer")

		sb.WriteString("person6@example.com,\n")
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o600))
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		run = waitRun(t, rt, id, err)
		require.Equal(t, state.RunCompleted, run.State)
		require.Equal(t, int64(1), run.Counts.Sent)
		require.Equal(t, int64(5), run.Counts.Rejected)
	})
}
