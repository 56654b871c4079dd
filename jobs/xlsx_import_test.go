package jobs_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// A workbook as people make them (a notes sheet first, a title row above the header)
// imports with no options: the mapping finds the sheet and the header row.
func TestImportWorkbookWithNotesAndTitle(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		f := excelize.NewFile()
		require.NoError(t, f.SetSheetName("Sheet1", "Notater"))
		require.NoError(t, f.SetSheetRow("Notater", "A1", &[]any{"Eksportert fra medlemsregisteret"}))
		_, err := f.NewSheet("Medlemmer")
		require.NoError(t, err)
		require.NoError(t, f.SetSheetRow("Medlemmer", "A1", &[]any{"Medlemsliste 2024"}))
		require.NoError(t, f.SetSheetRow("Medlemmer", "A3", &[]any{"Fornavn", "E-post"}))
		require.NoError(t, f.SetSheetRow("Medlemmer", "A4", &[]any{"Ola", "ola@example.no"}))
		require.NoError(t, f.SetSheetRow("Medlemmer", "A5", &[]any{"Kari", "kari@example.no"}))
		path := filepath.Join(t.TempDir(), "medlemmer.xlsx")
		require.NoError(t, f.SaveAs(path))
		require.NoError(t, f.Close())

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
