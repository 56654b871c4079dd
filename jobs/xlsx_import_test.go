package jobs_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"

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

// A workbook that breaks a bound of the reader while it is read (here a cell of 2 MB in its
// second row, past the 1 MB a cell may take) fails the run at once: the file will not change
// between attempts, so it is not retried, and an import --wait returns (#35).
func TestImportWorkbookTooLargeFailsAtOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		path := hostileWorkbook(t, `<row r="1"><c r="A1" t="inlineStr"><is><t>email</t></is></c></row>`+
			`<row r="2"><c r="A2" t="inlineStr"><is><t>ola@example.no</t></is></c></row>`+
			`<row r="3"><c r="A3" t="inlineStr"><is><t>`+strings.Repeat("K", 2<<20)+`</t></is></c></row>`)

		rt := b.open(t)
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		// The deadline only keeps a broken build from hanging the suite: the run fails in
		// well under a second.
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		run, err := rt.Wait(waitCtx, jobID, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed, "%+v", run)
		require.Equal(t, state.RunFailed, run.State)
		require.Equal(t, 1, run.Attempts)
		require.Contains(t, run.Error, "larger than 1048576 bytes")
		queued, err := rt.Jobs(ctx)
		require.NoError(t, err)
		require.Empty(t, queued, "nothing left to retry")
	})
}

// hostileWorkbook writes a workbook (made by excelize) whose worksheet's rows are rowsXML:
// it stands for an attacker's file, which no spreadsheet program would write.
func hostileWorkbook(t *testing.T, rowsXML string) string {
	t.Helper()
	f := excelize.NewFile()
	var book bytes.Buffer
	require.NoError(t, f.Write(&book))
	require.NoError(t, f.Close())
	zr, err := zip.NewReader(bytes.NewReader(book.Bytes()), int64(book.Len()))
	require.NoError(t, err)
	var out bytes.Buffer
	w := zip.NewWriter(&out)
	for _, e := range zr.File {
		if e.Name != "xl/worksheets/sheet1.xml" {
			require.NoError(t, w.Copy(e))
			continue
		}
		fw, err := w.CreateHeader(&zip.FileHeader{Name: e.Name, Method: zip.Deflate})
		require.NoError(t, err)
		_, err = io.WriteString(fw, `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`+
			rowsXML+`</sheetData></worksheet>`)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	path := filepath.Join(t.TempDir(), "hostile.xlsx")
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o600))
	return path
}
