package sources_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" for database/sql, to fill test tables
	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/sources/sourcetest"
)

// csvEncodings are the encodings a CSV file arrives in, each written with its usual mark.
var csvEncodings = []struct {
	name string
	bom  []byte
	enc  func(string) ([]byte, error) // nil = UTF-8 as is
}{
	{"utf-8", nil, nil},
	{"utf-8-bom", []byte{0xEF, 0xBB, 0xBF}, nil},
	{"utf-16le-bom", []byte{0xFF, 0xFE}, encoder(unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM))},
	{"utf-16be-bom", []byte{0xFE, 0xFF}, encoder(unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM))},
	{"windows-1252", nil, encoder(charmap.Windows1252)},
}

// encoder encodes with a new encoder each time: the parallel tests must not share one.
func encoder(e encoding.Encoding) func(string) ([]byte, error) {
	return func(s string) ([]byte, error) { return e.NewEncoder().Bytes([]byte(s)) }
}

// writeCSV writes a table as a spreadsheet program would: encoding/csv's quoting, the
// given delimiter and line ends, then the encoding and its byte order mark.
func writeCSV(t testing.TB, path string, table sourcetest.Table, delim rune, crlf bool, bom []byte, enc func(string) ([]byte, error)) {
	t.Helper()
	var text bytes.Buffer
	w := csv.NewWriter(&text)
	w.Comma, w.UseCRLF = delim, crlf
	require.NoError(t, w.Write(table.Header))
	require.NoError(t, w.WriteAll(table.Rows))
	data := text.Bytes()
	if enc != nil {
		var err error
		data, err = enc(text.String())
		require.NoError(t, err)
	}
	require.NoError(t, os.WriteFile(path, append(append([]byte(nil), bom...), data...), 0o600))
}

func TestConformanceCSV(t *testing.T) {
	t.Parallel()
	for _, e := range csvEncodings {
		for _, delim := range []rune{',', ';', '\t', '|'} {
			for _, crlf := range []bool{false, true} {
				name := fmt.Sprintf("%s/%q/crlf=%v", e.name, delim, crlf)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					h := sourcetest.Harness{
						FirstDataLine:   2,
						ShortRowIsError: true,
						Open: func(t *testing.T, table sourcetest.Table) sources.Reader {
							path := filepath.Join(t.TempDir(), "contacts.csv")
							writeCSV(t, path, table, delim, crlf, e.bom, e.enc)
							r, err := sources.OpenCSV(context.Background(), path, sources.CSVOptions{})
							require.NoError(t, err)
							if len(table.Header) > 1 {
								require.Equal(t, delim, r.Delimiter(), "detected delimiter")
							}
							if wantEnc := strings.TrimSuffix(e.name, "-bom"); wantEnc != "windows-1252" || !isASCII(table) {
								require.Equal(t, wantEnc, r.Encoding(), "detected encoding")
							} else {
								require.Equal(t, "utf-8", r.Encoding(), "ASCII is UTF-8")
							}
							return r
						},
					}
					if e.name == "windows-1252" {
						h.Encodable = func(s string) bool {
							_, err := charmap.Windows1252.NewEncoder().String(s)
							return err == nil
						}
					}
					sourcetest.Exercise(t, h)
				})
			}
		}
	}
}

// writeXLSX writes a table to the first sheet of a new workbook, with text in the
// shared-string table as Excel saves it, or, with stream, as inline strings through
// excelize's StreamWriter.
func writeXLSX(t testing.TB, path string, table sourcetest.Table, stream bool) {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	rows := append([][]string{table.Header}, table.Rows...)
	if stream {
		sw, err := f.NewStreamWriter("Sheet1")
		require.NoError(t, err)
		for i, row := range rows {
			cells := make([]any, len(row))
			for j, v := range row {
				cells[j] = v
			}
			cell, _ := excelize.CoordinatesToCellName(1, i+1)
			require.NoError(t, sw.SetRow(cell, cells))
		}
		require.NoError(t, sw.Flush())
	} else {
		for i, row := range rows {
			for j, v := range row {
				cell, _ := excelize.CoordinatesToCellName(j+1, i+1)
				require.NoError(t, f.SetCellStr("Sheet1", cell, v))
			}
		}
	}
	require.NoError(t, f.SaveAs(path))
}

func TestConformanceXLSX(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			sourcetest.Exercise(t, sourcetest.Harness{
				FirstDataLine: 2,
				Sheet:         "Sheet1",
				Open: func(t *testing.T, table sourcetest.Table) sources.Reader {
					path := filepath.Join(t.TempDir(), "contacts.xlsx")
					writeXLSX(t, path, table, stream)
					r, err := sources.OpenXLSX(context.Background(), path, sources.XLSXOptions{})
					require.NoError(t, err)
					return r
				},
			})
		})
	}
}

// sqlBackend stores tables in one database and opens SQL readers over them.
type sqlBackend struct {
	driver string
	// db returns a handle on a fresh database (or schema) and the DSN that reaches it.
	db     func(t *testing.T) (*sql.DB, string)
	quote  func(string) string
	column string // the type of the text columns
}

func quoteWith(q string) func(string) string {
	return func(id string) string { return q + strings.ReplaceAll(id, q, q+q) + q }
}

var sqlBackends = []sqlBackend{
	{driver: "sqlite", db: sqliteDB, quote: quoteWith(`"`), column: "TEXT"},
	{driver: "pgx", db: postgresDB, quote: quoteWith(`"`), column: "TEXT"},
	{driver: "mysql", db: mysqlDB, quote: quoteWith("`"), column: "TEXT CHARACTER SET utf8mb4"},
}

func sqliteDB(t *testing.T) (*sql.DB, string) {
	dsn := filepath.Join(t.TempDir(), "contacts.db")
	db, err := sql.Open("sqlite", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db, dsn
}

func postgresDB(t *testing.T) (*sql.DB, string) {
	dsn, _ := testdb.PostgresSchema(t)
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db, dsn
}

func mysqlDB(t *testing.T) (*sql.DB, string) {
	db := testdb.MySQL(t)
	var name string
	require.NoError(t, db.QueryRow("SELECT DATABASE()").Scan(&name))
	return db, mysqlDSN(t, name)
}

// mysqlDSN is TEST_MYSQL_DSN (or its default) on the named database.
func mysqlDSN(t *testing.T, database string) string {
	dsn := os.Getenv("TEST_MYSQL_DSN")
	if dsn == "" {
		dsn = testdb.DefaultMySQLDSN
	}
	slash := strings.LastIndex(dsn, "/")
	require.GreaterOrEqual(t, slash, 0, "TEST_MYSQL_DSN has no /database part")
	rest := ""
	if q := strings.Index(dsn[slash:], "?"); q >= 0 {
		rest = dsn[slash+q:]
	}
	return dsn[:slash] + "/" + database + rest
}

// store writes a table as a database table t (ord, c1, c2, ...) with a missing cell as NULL
// and returns the query that reads it back with the header as column names. Columns past
// the header are named " ", as a blank header cell.
func (b sqlBackend) store(t *testing.T, db *sql.DB, table sourcetest.Table) string {
	width := len(table.Header)
	for _, row := range table.Rows {
		width = max(width, len(row))
	}
	cols, sel := []string{"ord INTEGER"}, []string{}
	for i := range width {
		name := " "
		if i < len(table.Header) {
			name = table.Header[i]
		}
		cols = append(cols, fmt.Sprintf("c%d %s", i, b.column))
		sel = append(sel, fmt.Sprintf("c%d AS %s", i, b.quote(name)))
	}
	_, err := db.Exec("CREATE TABLE contacts (" + strings.Join(cols, ", ") + ")")
	require.NoError(t, err)
	tx, err := db.Begin()
	require.NoError(t, err)
	marks := make([]string, width+1)
	for i := range marks {
		marks[i] = "?"
		if b.driver == "pgx" {
			marks[i] = fmt.Sprintf("$%d", i+1)
		}
	}
	insert := "INSERT INTO contacts VALUES (" + strings.Join(marks, ", ") + ")"
	for i, row := range table.Rows {
		args := []any{i}
		for j := range width {
			if j < len(row) {
				args = append(args, row[j])
			} else {
				args = append(args, nil)
			}
		}
		_, err := tx.Exec(insert, args...)
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit())
	return "SELECT " + strings.Join(sel, ", ") + " FROM contacts ORDER BY ord"
}

func TestConformanceSQL(t *testing.T) {
	t.Parallel()
	for _, b := range sqlBackends {
		t.Run(b.driver, func(t *testing.T) {
			t.Parallel()
			sourcetest.Exercise(t, sourcetest.Harness{
				FirstDataLine: 1,
				Open: func(t *testing.T, table sourcetest.Table) sources.Reader {
					db, dsn := b.db(t)
					query := b.store(t, db, table)
					r, err := sources.OpenSQL(context.Background(), sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: query})
					require.NoError(t, err)
					return r
				},
			})
		})
	}
}

func isASCII(table sourcetest.Table) bool {
	for _, row := range append([][]string{table.Header}, table.Rows...) {
		for _, v := range row {
			for i := 0; i < len(v); i++ {
				if v[i] >= 0x80 {
					return false
				}
			}
		}
	}
	return true
}
