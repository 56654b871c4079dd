package jobs_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
)

// InspectFile tells what an import would find in a file: a workbook's sheet and the row of
// its header below a title (the import page's workbook, written by openpyxl), a CSV's
// encoding, byte-order mark and delimiter; the first three values of each column that are not
// empty; and the automatic mapping, with the columns it leaves out.
func TestInspectFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, err := jobs.InspectFile(ctx, sources.Config{Path: filepath.Join("..", "web", "testdata", "import", "medlemmer.xlsx")})
	require.NoError(t, err)
	require.Equal(t, "xlsx", f.Kind)
	require.Equal(t, "Medlemmer", f.Sheet)
	require.Equal(t, []string{"Medlemmer"}, f.Sheets)
	require.Equal(t, 3, f.HeaderRow)
	require.Equal(t, []string{"E-post", "Fornavn", "Etternavn", "Mobil", "Arbeidsgiver", "<svg onload=alert(4)>"}, f.Header)
	require.Equal(t, []string{"kari.nordmann@example.no", "hacker@example.no", "ola@example.no"}, f.Samples[0])
	require.Equal(t, []string{"+4791234567", "12ab", "+4740000001"}, f.Samples[3], "empty cells skipped")
	require.Equal(t, mapping.Column{To: "email"}, f.Auto.Columns["E-post"])
	require.Equal(t, []string{"Arbeidsgiver", "<svg onload=alert(4)>"}, f.Unplaced)

	path := filepath.Join(t.TempDir(), "kontakter.csv")
	require.NoError(t, os.WriteFile(path, []byte("\xef\xbb\xbf\n\nE-post;Fornavn\nkari@example.no;Kari\n"), 0o600))
	f, err = jobs.InspectFile(ctx, sources.Config{Path: path})
	require.NoError(t, err)
	require.Equal(t, "csv", f.Kind)
	require.Equal(t, ";", f.Delimiter)
	require.True(t, f.BOM)
	require.Equal(t, "utf-8", f.Encoding)
	require.Equal(t, 3, f.HeaderRow, "blank lines above the header")
	require.Equal(t, [][]string{{"kari@example.no"}, {"Kari"}}, f.Samples)
}
