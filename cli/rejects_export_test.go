package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// The rejects export opens in a spreadsheet with æøå intact and the source's delimiter, or as
// a workbook (--format xlsx, or a file name ending in .xlsx); each imports again as it stands:
// a preview of the export shows the rejected rows with their own values (#29 point 8).
func TestRejectsExportOpensInASpreadsheet(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Medlemmer")
	file := filepath.Join(h.dir, "kunder.csv")
	require.NoError(t, os.WriteFile(file, []byte("E-post;Fornavn;Etternavn;Mobil\n"+
		"ada@example.com;Ada;Lovelace;\n"+
		"bjørn.ødegård;Bjørn;Ødegård;+4791234567\n"+
		"åse@example.no;Åse;=Bækkelund;\n"), 0o600))
	run := decode[runJSON](t, h.ok("import", file, "--list", fmt.Sprint(list), "--wait", "--json"))
	require.Equal(t, int64(1), run.Counts.Rejected)
	id := fmt.Sprint(run.ID)

	csvFile := filepath.Join(h.dir, "rejects.csv")
	h.ok("runs", id, "--rejects", csvFile)
	data := mustRead(t, csvFile)
	require.True(t, strings.HasPrefix(data, "\uFEFFE-post;Fornavn;Etternavn;Mobil;subsync:kind;"), data)
	require.Contains(t, data, "\nbjørn.ødegård;Bjørn;Ødegård;'+4791234567;rejected;3;E-post;invalid_email;")

	for _, args := range [][]string{{"--rejects", filepath.Join(h.dir, "rejects.xlsx")}, {"--rejects", filepath.Join(h.dir, "book"), "--format", "xlsx"}} {
		h.ok(append([]string{"runs", id}, args...)...)
		book := args[1]
		require.True(t, strings.HasPrefix(mustRead(t, book), "PK"), "a workbook (a zip archive)")
		csvPreview := h.ok("preview", csvFile, "--kind", "csv", "--json")
		bookPreview := h.ok("preview", book, "--kind", "xlsx", "--json")
		require.Contains(t, csvPreview, `"value":"bjørn.ødegård"`)
		require.Contains(t, csvPreview, `"rows":1`)
		require.Equal(t, []string{"bjørn.ødegård", "Bjørn", "Ødegård", "+4791234567"}, firstRow(t, book, sources.KindXLSX)[:4],
			"the workbook's cells are not quoted")
		require.Equal(t, []string{"bjørn.ødegård", "Bjørn", "Ødegård", "'+4791234567"}, firstRow(t, csvFile, sources.KindCSV)[:4],
			"the CSV file's formula-like cell is quoted (and the quote taken away on import)")
		require.Equal(t, csvPreview, strings.ReplaceAll(bookPreview, `"sheet":"Rejects",`, ""),
			"the workbook previews as the CSV file does")
	}

	// Standard output: CSV for scripts, without a byte-order mark; a workbook only when
	// standard output is not a terminal.
	require.Equal(t, strings.TrimPrefix(data, "\uFEFF"), h.ok("runs", id, "--rejects", "-"))
	require.True(t, strings.HasPrefix(h.ok("runs", id, "--rejects", "-", "--format", "xlsx"), "PK"))
	h.ttyOut = true
	r := h.run("", "runs", id, "--rejects", "-", "--format", "xlsx")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "give --rejects a file name")
}

// firstRow returns the first row of a file, as an import reads it.
func firstRow(t *testing.T, path, kind string) []string {
	t.Helper()
	r, err := sources.Open(context.Background(), sources.Config{Path: path, Kind: kind})
	require.NoError(t, err)
	defer r.Close()
	rec, err := r.Next(context.Background())
	require.NoError(t, err)
	return rec.Values
}
