package export_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/export"
	"github.com/subsync/subsync/internal/rejectfile"
	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// eachDB runs fn on a fresh SQLite store and a fresh Postgres schema.
func eachDB(t *testing.T, fn func(t *testing.T, s *state.Store)) {
	t.Helper()
	open := map[string]func(t *testing.T) (*sql.DB, state.Dialect){
		"sqlite": func(t *testing.T) (*sql.DB, state.Dialect) {
			db, err := state.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "subsync.db"))
			require.NoError(t, err)
			return db, state.SQLite
		},
		"postgres": func(t *testing.T) (*sql.DB, state.Dialect) {
			u, _ := testdb.PostgresSchema(t)
			db, err := sql.Open("pgx", u)
			require.NoError(t, err)
			return db, state.Postgres
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, d := open[name](t)
			t.Cleanup(func() { _ = db.Close() })
			_, err := state.Migrate(context.Background(), db, d)
			require.NoError(t, err)
			fn(t, state.New(db, d))
		})
	}
}

// aRun records a run (of job jobID) of a file with the header E-post, Navn, Mobil read with delim (0: none
// recorded): a rejected row with æøå and a cell a spreadsheet would run as a formula, and a
// row sent with two problems.
func aRun(t *testing.T, s *state.Store, jobID int64, delim rune) int64 {
	t.Helper()
	ctx := context.Background()
	run, err := s.ClaimRun(ctx, state.Claim{JobID: jobID, Kind: state.KindImport, Name: "kunder.csv", ListID: 7,
		Source: "/data/kunder.csv", Owner: "o", Worker: "w", TTL: time.Minute})
	require.NoError(t, err)
	require.NoError(t, s.SetSourceHeader(ctx, run.ID, "o", []string{"E-post", "Navn", "Mobil"}))
	if delim != 0 {
		require.NoError(t, s.SetSourceDelimiter(ctx, run.ID, "o", delim))
	}
	row := func(v ...string) string { return state.EncodeRow(v) }
	require.NoError(t, s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "o", TTL: time.Minute, Position: 3,
		Rejects: []state.Reject{{Ordinal: 1, Line: 2, Column: "E-post", Value: "bjørn.æøå", Code: "invalid_email",
			Reason: "the e-mail address is not valid", Row: row("bjørn.æøå", "=Bjørn; Ødegård", "+47 91 23 45 67")}},
		Warnings: []state.Reject{
			{Ordinal: 3, Line: 4, Column: "Mobil", Value: "12", Code: "invalid_phone", Reason: "too short", Row: row("åse@example.no", "Åse", "12")},
			{Ordinal: 3, Line: 4, Column: "Navn", Value: "Åse", Code: "too_long", Reason: "too long", Row: row("åse@example.no", "Åse", "12")},
		}}))
	return run.ID
}

// want is the export of aRun, as ExportRows gives it.
var want = [][]string{
	{"E-post", "Navn", "Mobil", "subsync:kind", "subsync:line", "subsync:column", "subsync:code", "subsync:reason"},
	{"bjørn.æøå", "=Bjørn; Ødegård", "+47 91 23 45 67", "rejected", "2", "E-post", "invalid_email", "the e-mail address is not valid"},
	{"åse@example.no", "Åse", "12", "warning", "4", "Mobil; Navn", "invalid_phone; too_long", "too short; too long"},
}

// quoted is want as a CSV export has it: the cells a spreadsheet would run as a formula quoted.
func quoted() [][]string {
	var q [][]string
	for _, r := range want {
		row := make([]string, len(r))
		for i, v := range r {
			row[i] = rejectfile.Neutralise(v)
		}
		q = append(q, row)
	}
	return q
}

func exportOf(t *testing.T, s *state.Store, runID int64, opts export.Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, export.Rejects(context.Background(), s, runID, &buf, opts))
	return buf.Bytes()
}

// readSource reads a file as an import does; it returns its header and rows.
func readSource(t *testing.T, path string) ([]string, [][]string) {
	t.Helper()
	r, err := sources.Open(context.Background(), sources.Config{Path: path})
	require.NoError(t, err)
	defer r.Close()
	rows := [][]string{r.Header()}
	for {
		rec, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return r.Header(), rows
		}
		require.NoError(t, err)
		rows = append(rows, rec.Values)
	}
}

// A CSV export opens in a spreadsheet: UTF-8 with a byte-order mark, the source's delimiter
// (a semicolon file gives a semicolon export, none recorded a comma), formulas quoted, a
// row's problems all in its line. Standard output's form is the same without the mark.
// Each reads back, as an import reads it, to the rows exported.
func TestCSVOpensInASpreadsheet(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		for i, delim := range []rune{';', ',', '\t', 0} {
			runID := aRun(t, s, int64(i+1), delim)
			data := exportOf(t, s, runID, export.Options{})
			require.True(t, bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")), "a byte-order mark")
			comma := delim
			if comma == 0 {
				comma = ','
			}
			r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))))
			r.Comma = comma
			recs, err := r.ReadAll()
			require.NoError(t, err, "delimiter %q", comma)
			require.Equal(t, quoted(), recs)
			require.Equal(t, "E-post"+string(comma)+"Navn", string(data[3:3+len("E-post")+1+len("Navn")]))

			plain := exportOf(t, s, runID, export.Options{NoBOM: true})
			require.Equal(t, data[3:], plain, "standard output: the same bytes without the mark")

			path := filepath.Join(t.TempDir(), "rejects.csv")
			require.NoError(t, os.WriteFile(path, data, 0o600))
			_, rows := readSource(t, path)
			require.Equal(t, quoted(), rows, "an import reads the export back")
		}
	})
}

// An XLSX export is a workbook of the same rows, no cell quoted (nothing in it is a formula),
// the line numbers as numbers; it reads back as it was written.
func TestXLSXExport(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		runID := aRun(t, s, 1, ';')
		data := exportOf(t, s, runID, export.Options{Format: export.XLSX})
		path := filepath.Join(t.TempDir(), "rejects.xlsx")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		_, rows := readSource(t, path)
		require.Equal(t, want, rows)
		require.NotContains(t, string(data), "=Bj", "the archive is compressed")
		r, err := sources.OpenXLSX(context.Background(), path, sources.XLSXOptions{})
		require.NoError(t, err)
		defer r.Close()
		require.Equal(t, export.SheetName, r.Sheet())
	})
}

func TestFormats(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": export.CSV, "csv": export.CSV, "XLSX": export.XLSX} {
		got, err := export.ParseFormat(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := export.ParseFormat("xls")
	require.ErrorContains(t, err, `format "xls": want csv or xlsx`)
	require.Equal(t, export.XLSX, export.FormatOf("rejects.XLSX"))
	require.Equal(t, export.CSV, export.FormatOf("rejects.csv"))
	require.Equal(t, export.CSV, export.FormatOf("-"))
	require.True(t, strings.HasSuffix(export.FileName(7, export.XLSX), "run-7-rejects.xlsx"))
	require.Equal(t, "text/csv; charset=utf-8", export.ContentType(export.CSV))
}
