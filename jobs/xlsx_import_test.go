package jobs_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources/sourcetest"
	"github.com/subsync/subsync/state"
)

// A workbook as people make them (a notes sheet first, a title row above the header)
// imports with no options: the mapping finds the sheet and the header row.
func TestImportWorkbookWithNotesAndTitle(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		path := filepath.Join(t.TempDir(), "medlemmer.xlsx")
		sourcetest.NotesAndTitleWorkbook(t, path, [2]string{"Ola", "ola@example.no"}, [2]string{"Kari", "kari@example.no"})

		rt := b.open(t)
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		run, err := rt.Wait(ctx, jobID, nil)
		require.NoError(t, err)
		require.Equal(t, state.RunCompleted, run.State, run.Error)
		require.Equal(t, state.Counts{Read: 2, Sent: 2, Batches: 1, Requests: 1}, run.Counts)
		got, ok := b.emu.SubscriberByEmail("kari@example.no")
		require.True(t, ok)
		require.Equal(t, "Kari", got.Fields["firstname"])
	})
}
