package sources_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// corpusDir holds workbooks made by the programs people export from (openpyxl, XlsxWriter,
// SheetJS, ExcelJS, excelize, LibreOffice), each from the rows of rows.csv, and how each
// was made (README.md there).
const corpusDir = "testdata/workbooks"

// corpusWriters are the workbooks the corpus must hold: one for each writer and mode that
// the README lists as covered. A writer left out of the directory fails the test.
var corpusWriters = []string{
	"excelize.xlsx", "excelize-stream.xlsx",
	"exceljs.xlsx", "exceljs-stream.xlsx", "exceljs-stream-inline.xlsx",
	"libreoffice.xlsx",
	"openpyxl.xlsx", "openpyxl-write-only.xlsx",
	"sheetjs.xlsx", "sheetjs-sst.xlsx",
	"xlsxwriter.xlsx", "xlsxwriter-constant-memory.xlsx",
}

// readAll returns a source's header and records (a row error fails the test).
func readCorpusFile(t *testing.T, path string) ([]string, []sources.Record) {
	t.Helper()
	r, err := sources.Open(context.Background(), sources.Config{Path: path})
	require.NoError(t, err)
	defer r.Close()
	var recs []sources.Record
	for {
		rec, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "row %d", rec.Line)
		rec.Sheet = "" // the CSV file has none
		recs = append(recs, rec)
	}
	return r.Header(), recs
}

// Every workbook of the corpus reads exactly as the CSV file of the same rows: the same
// header, the same rows on the same lines, every cell the same text (dates as ISO dates,
// numbers with all their digits, a phone's leading zero, æøå, empty cells).
func TestWorkbookCorpusReadsLikeCSV(t *testing.T) {
	wantHeader, want := readCorpusFile(t, filepath.Join(corpusDir, "rows.csv"))
	require.Len(t, want, 8)
	found, err := filepath.Glob(filepath.Join(corpusDir, "*.xlsx"))
	require.NoError(t, err)
	var names []string
	for _, f := range found {
		names = append(names, filepath.Base(f))
	}
	require.ElementsMatch(t, corpusWriters, names, "the corpus holds one workbook for each writer")
	for _, name := range corpusWriters {
		t.Run(strings.TrimSuffix(name, ".xlsx"), func(t *testing.T) {
			header, got := readCorpusFile(t, filepath.Join(corpusDir, name))
			require.Equal(t, wantHeader, header)
			require.Equal(t, want, got)
		})
	}
}

// The corpus says how each workbook was made and by which version of its program.
func TestWorkbookCorpusDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(corpusDir, "README.md"))
	require.NoError(t, err)
	versions, err := os.ReadFile(filepath.Join(corpusDir, "versions.txt"))
	require.NoError(t, err)
	for _, name := range corpusWriters {
		require.Contains(t, string(readme), name)
	}
	for _, program := range []string{"openpyxl", "XlsxWriter", "SheetJS", "ExcelJS", "excelize", "LibreOffice"} {
		require.Contains(t, string(versions), program)
	}
}
