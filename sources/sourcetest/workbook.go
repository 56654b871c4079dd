package sourcetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"
)

// NotesAndTitleWorkbook writes to path a workbook as people make them: a notes sheet first,
// then a "Medlemmer" sheet with a title row, a blank row, the header (Fornavn, E-post) on row
// 3 and one row for each person from row 4. Opened with no sheet or header row given, an
// import must find the second sheet and row 3.
func NotesAndTitleWorkbook(t *testing.T, path string, people ...[2]string) {
	t.Helper()
	f := excelize.NewFile()
	require.NoError(t, f.SetSheetName("Sheet1", "Notater"))
	require.NoError(t, f.SetSheetRow("Notater", "A1", &[]any{"Eksportert fra medlemsregisteret"}))
	_, err := f.NewSheet("Medlemmer")
	require.NoError(t, err)
	require.NoError(t, f.SetSheetRow("Medlemmer", "A1", &[]any{"Medlemsliste 2024"}))
	require.NoError(t, f.SetSheetRow("Medlemmer", "A3", &[]any{"Fornavn", "E-post"}))
	for i, p := range people {
		require.NoError(t, f.SetSheetRow("Medlemmer", fmt.Sprintf("A%d", 4+i), &[]any{p[0], p[1]}))
	}
	require.NoError(t, f.SaveAs(path))
	require.NoError(t, f.Close())
}
