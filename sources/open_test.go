package sources_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/sources/sourcetest"
)

func TestOpenPicksTheKind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	table := sourcetest.Table{Header: []string{"email", "name"}, Rows: [][]string{{"a@x.no", "A"}}}
	csvPath := filepath.Join(dir, "contacts.csv")
	writeCSV(t, csvPath, table, ';', true, nil, nil)
	xlsxPath := filepath.Join(dir, "contacts.xlsx")
	writeXLSX(t, xlsxPath, table, false)
	noExt := filepath.Join(dir, "export")
	require.NoError(t, os.WriteFile(noExt, []byte("email,name\na@x.no,A\n"), 0o600))
	workbookNoExt := filepath.Join(dir, "workbook-export")
	writeXLSX(t, workbookNoExt+".xlsx", table, true)
	require.NoError(t, os.Rename(workbookNoExt+".xlsx", workbookNoExt))
	db, dsn := sqliteDB(t)
	_, err := db.Exec("CREATE TABLE contacts (email TEXT, name TEXT)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO contacts VALUES ('a@x.no', 'A')")
	require.NoError(t, err)

	tests := []struct {
		name string
		cfg  sources.Config
		want any
	}{
		{"csv by name", sources.Config{Path: csvPath}, &sources.CSVReader{}},
		{"xlsx by name", sources.Config{Path: xlsxPath}, &sources.XLSXReader{}},
		{"csv by content", sources.Config{Path: noExt}, &sources.CSVReader{}},
		{"xlsx by content", sources.Config{Path: workbookNoExt}, &sources.XLSXReader{}},
		{"csv by kind", sources.Config{Kind: "csv", Path: noExt}, &sources.CSVReader{}},
		{"sql", sources.Config{Kind: "sql", Driver: "sqlite", DSN: dsn, Query: "SELECT email, name FROM contacts"}, &sources.SQLReader{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := sources.Open(context.Background(), tt.cfg)
			require.NoError(t, err)
			defer r.Close()
			require.IsType(t, tt.want, r)
			require.Equal(t, []string{"email", "name"}, r.Header())
			rec, err := r.Next(context.Background())
			require.NoError(t, err)
			require.Equal(t, []string{"a@x.no", "A"}, rec.Values)
		})
	}
}

// A file whose content is not what its name says fails with a message that says what it is.
func TestOpenContentMismatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	table := sourcetest.Table{Header: []string{"email"}, Rows: [][]string{{"a@x.no"}}}
	workbook := filepath.Join(dir, "contacts.xlsx")
	writeXLSX(t, workbook, table, false)
	data, err := os.ReadFile(workbook)
	require.NoError(t, err)

	tests := []struct {
		name    string
		file    string
		data    []byte
		kind    string
		wantIs  error
		wantHas string
	}{
		{"a workbook named .csv", "contacts.csv", data, "", sources.ErrContentMismatch, "it is named as a CSV file but it is a zip archive (an .xlsx workbook?)"},
		{"a workbook with kind csv", "contacts.dat", data, "csv", sources.ErrContentMismatch, "not CSV text"},
		{"CSV named .xlsx", "contacts.xlsx", []byte("email\na@x.no\n"), "", sources.ErrContentMismatch, "it is named as an Excel workbook but it is text"},
		{"an .xlsx named .xls", "contacts.xls", data, "", sources.ErrContentMismatch, "named as an Excel 97-2003 workbook (.xls) but it is a zip archive"},
		{"an .xls", "contacts.xls", oleFile(false), "", sources.ErrLegacyXLS, "save it as .xlsx or CSV"},
		{"an encrypted workbook named .xls", "contacts.xls", oleFile(true), "", sources.ErrEncryptedWorkbook, "password"},
		{"an encrypted workbook", "contacts.xlsx", oleFile(true), "", sources.ErrEncryptedWorkbook, "password"},
		{"binary named .csv", "contacts.csv", append([]byte("%PDF-1.7\n"), make([]byte, 100)...), "", sources.ErrContentMismatch, "a PDF document, not CSV text"},
		{"binary without a known name", "contacts.bin", append([]byte("\x1f\x8b\x08"), make([]byte, 100)...), "", sources.ErrContentMismatch, "a gzip archive, neither CSV text nor an .xlsx workbook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, tt.file, tt.data)
			r, err := sources.Open(context.Background(), sources.Config{Kind: tt.kind, Path: path})
			require.Nil(t, r)
			require.ErrorIs(t, err, tt.wantIs)
			require.ErrorContains(t, err, tt.wantHas)
			require.ErrorContains(t, err, path)
		})
	}
	t.Run("an unknown kind", func(t *testing.T) {
		t.Parallel()
		_, err := sources.Open(context.Background(), sources.Config{Kind: "json", Path: workbook})
		require.ErrorContains(t, err, `source kind "json": want csv, xlsx or sql`)
	})
	t.Run("a missing file", func(t *testing.T) {
		t.Parallel()
		_, err := sources.Open(context.Background(), sources.Config{Path: filepath.Join(dir, "gone.csv")})
		require.ErrorIs(t, err, os.ErrNotExist)
	})
}

func TestConfigString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "csv source a.csv", sources.Config{Kind: "csv", Path: "a.csv"}.String())
	require.Equal(t, "source a.xlsx", sources.Config{Path: "a.xlsx"}.String())
	require.Equal(t, "sql source (driver pgx, dsn postgres://u:xxxxx@db/crm)",
		sources.Config{Kind: "sql", Driver: "pgx", DSN: "postgres://u:pw@db/crm"}.String())
}
