package sources_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// exec runs statements written with ? placeholders, numbered for Postgres.
func (b sqlBackend) exec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if b.driver == "pgx" {
		for i := 1; strings.Contains(query, "?"); i++ {
			query = strings.Replace(query, "?", fmt.Sprintf("$%d", i), 1)
		}
	}
	_, err := db.Exec(query, args...)
	require.NoError(t, err, query)
}

func backend(driver string) sqlBackend {
	for _, b := range sqlBackends {
		if b.driver == driver {
			return b
		}
	}
	panic("no backend " + driver)
}

func openSQL(t *testing.T, opts sources.SQLOptions) *sources.SQLReader {
	t.Helper()
	r, err := sources.OpenSQL(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// Values of every common column type become the text a person expects.
func TestSQLValueTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		driver string
		create string
		insert string
		want   []string
	}{
		{
			driver: "pgx",
			create: `CREATE TABLE people (id bigint, born date, seen timestamp, changed timestamptz, amount numeric(12,2),
				active boolean, phone bigint, score double precision, note text, uid uuid, tags text[], data jsonb, at time, missing text)`,
			insert: `INSERT INTO people VALUES (1, '1980-05-17', '2024-01-31 13:45:10.5', '2024-01-31 13:45:10+01', 1234.50,
				true, 4790000000, 0.1, 'Søren "S" Ærlig', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{a,b}', '{"k": 1}', '13:45:00', NULL)`,
			want: []string{"1", "1980-05-17", "2024-01-31T13:45:10.5", "2024-01-31T12:45:10Z", "1234.50",
				"true", "4790000000", "0.1", `Søren "S" Ærlig`, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", `["a","b"]`, `{"k":1}`, "13:45:00", ""},
		},
		{
			driver: "mysql",
			create: `CREATE TABLE people (id BIGINT, born DATE, seen DATETIME(6), changed TIMESTAMP NULL, amount DECIMAL(12,2),
				active BOOLEAN, phone BIGINT, score DOUBLE, note VARCHAR(100), at TIME, missing TEXT) CHARACTER SET utf8mb4`,
			insert: `INSERT INTO people VALUES (1, '1980-05-17', '2024-01-31 13:45:10.5', '2024-01-31 13:45:10', 1234.50,
				true, 4790000000, 0.1, 'Søren "S" Ærlig', '13:45:00', NULL)`,
			want: []string{"1", "1980-05-17", "2024-01-31T13:45:10.5", "2024-01-31T13:45:10", "1234.50",
				"1", "4790000000", "0.1", `Søren "S" Ærlig`, "13:45:00", ""},
		},
		{
			driver: "sqlite",
			create: `CREATE TABLE people (id INTEGER, born DATE, seen DATETIME, amount NUMERIC, active BOOLEAN,
				phone INTEGER, score REAL, note TEXT, missing TEXT)`,
			insert: `INSERT INTO people VALUES (1, '1980-05-17', '2024-01-31 13:45:10.5', 1234.50, 1,
				4790000000, 0.1, 'Søren "S" Ærlig', NULL)`,
			want: []string{"1", "1980-05-17", "2024-01-31T13:45:10.5", "1234.5", "1",
				"4790000000", "0.1", `Søren "S" Ærlig`, ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.driver, func(t *testing.T) {
			t.Parallel()
			b := backend(tt.driver)
			db, dsn := b.db(t)
			b.exec(t, db, tt.create)
			b.exec(t, db, tt.insert)
			r := openSQL(t, sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: "SELECT * FROM people;\n"})
			require.Len(t, r.Header(), len(tt.want))
			requireRows(t, []row{{line: 1, values: tt.want}}, readAll(t, r))
		})
	}
}

// An incremental read: the first run reads everything, the next only what changed since.
func TestSQLWatermark(t *testing.T) {
	t.Parallel()
	types := map[string]string{"pgx": "timestamptz", "mysql": "DATETIME(3)", "sqlite": "DATETIME"}
	stamps := map[string][]string{ // T1..T5 as each run returns them
		"pgx":    {"2024-01-01T10:00:00Z", "2024-01-02T10:00:00.25Z", "2024-01-03T10:00:00Z", "2024-01-04T09:00:00Z", "2024-01-04T10:00:00.5Z"},
		"mysql":  {"2024-01-01T10:00:00", "2024-01-02T10:00:00.25", "2024-01-03T10:00:00", "2024-01-04T09:00:00", "2024-01-04T10:00:00.5"},
		"sqlite": {"2024-01-01T10:00:00", "2024-01-02T10:00:00.25", "2024-01-03T10:00:00", "2024-01-04T09:00:00", "2024-01-04T10:00:00.5"},
	}
	// As written into the table.
	written := []string{"2024-01-01 10:00:00", "2024-01-02 10:00:00.25", "2024-01-03 10:00:00", "2024-01-04 09:00:00", "2024-01-04 10:00:00.5"}
	for _, b := range sqlBackends {
		t.Run(b.driver, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.db(t)
			if b.driver == "pgx" {
				b.exec(t, db, "SET TIME ZONE 'UTC'")
			}
			b.exec(t, db, "CREATE TABLE contacts (id INTEGER, email VARCHAR(100), updated_at "+types[b.driver]+")")
			ts := func(i int) string {
				if b.driver == "pgx" {
					return written[i] + "+00"
				}
				return written[i]
			}
			b.exec(t, db, "INSERT INTO contacts VALUES (1, 'a@x.no', ?), (2, 'b@x.no', ?), (3, 'c@x.no', ?), (4, 'n@x.no', NULL)", ts(0), ts(1), ts(2))
			query := "SELECT email, updated_at FROM contacts"
			T := stamps[b.driver]
			read := func(watermark string) ([]string, string) {
				r := openSQL(t, sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: query, WatermarkColumn: "updated_at", Watermark: watermark})
				var emails []string
				for _, got := range readAll(t, r) {
					require.Empty(t, got.errHas)
					emails = append(emails, got.values[0])
				}
				// At the end the reader holds no transaction: the writes below do not
				// wait for Close (SQLite would report the database locked).
				return emails, r.Watermark()
			}

			emails, wm := read("")
			require.ElementsMatch(t, []string{"a@x.no", "b@x.no", "c@x.no", "n@x.no"}, emails, "a full run reads every row")
			require.Equal(t, T[2], wm)

			b.exec(t, db, "UPDATE contacts SET updated_at = ? WHERE id = 2", ts(3))
			b.exec(t, db, "INSERT INTO contacts VALUES (5, 'e@x.no', ?), (6, 'same@x.no', ?)", ts(4), ts(2))
			emails, wm2 := read(wm)
			require.Equal(t, []string{"b@x.no", "e@x.no"}, emails, "only rows changed after the watermark, in its order")
			require.Equal(t, T[4], wm2)

			emails, wm3 := read(wm2)
			require.Empty(t, emails)
			require.Equal(t, wm2, wm3, "nothing new: the watermark stays")

			t.Run("by id", func(t *testing.T) {
				r := openSQL(t, sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: "SELECT id, email FROM contacts", WatermarkColumn: "ID", Watermark: "4"})
				rows := readAll(t, r)
				require.Equal(t, []row{{line: 1, values: []string{"5", "e@x.no"}}, {line: 2, values: []string{"6", "same@x.no"}}}, rows)
				require.Equal(t, "6", r.Watermark())
			})
		})
	}
}

// The query runs in a read-only transaction: a statement that writes fails.
func TestSQLReadOnly(t *testing.T) {
	t.Parallel()
	for _, b := range sqlBackends {
		t.Run(b.driver, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.db(t)
			b.exec(t, db, "CREATE TABLE contacts (email VARCHAR(100))")
			b.exec(t, db, "INSERT INTO contacts VALUES ('a@x.no')")
			_, err := sources.OpenSQL(context.Background(), sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: "DELETE FROM contacts RETURNING email"})
			require.ErrorIs(t, err, sources.ErrQueryRefused)
			require.ErrorContains(t, err, "it uses DELETE")
			if b.driver == "pgx" {
				// A SELECT that writes passes the check; the read-only transaction stops it.
				b.exec(t, db, "CREATE SEQUENCE s")
				_, err := sources.OpenSQL(context.Background(), sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: "SELECT nextval('s')"})
				require.Regexp(t, `(?i)read.only`, err.Error())
				require.ErrorIs(t, err, sources.ErrQueryNeverSucceeds)
			}
			var n int
			require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM contacts").Scan(&n))
			require.Equal(t, 1, n)
		})
	}
}

// Rows come from the server as they are read: an endless query can be read and closed.
func TestSQLStreamsAndCancels(t *testing.T) {
	t.Parallel()
	queries := map[string]string{
		"pgx":    "SELECT generate_series(1, 1000000000) AS n", // in the select list: streamed, not materialized
		"mysql":  "SELECT seq AS n FROM seq_1_to_1000000000",
		"sqlite": "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s) SELECT n FROM s",
	}
	for _, b := range sqlBackends {
		t.Run(b.driver, func(t *testing.T) {
			t.Parallel()
			_, dsn := b.db(t)
			r, err := sources.OpenSQL(context.Background(), sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: queries[b.driver]})
			require.NoError(t, err)
			for i := 1; i <= 3; i++ {
				rec, err := r.Next(context.Background())
				require.NoError(t, err)
				require.Equal(t, []string{fmt.Sprint(i)}, rec.Values)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err = r.Next(ctx)
			require.ErrorIs(t, err, context.Canceled)
			closePromptly(t, r)

			// Closing early, without a cancelled context, does not read the rest either.
			for range 3 {
				r, err = sources.OpenSQL(context.Background(), sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: queries[b.driver]})
				require.NoError(t, err)
				_, err = r.Next(context.Background())
				require.NoError(t, err)
				closePromptly(t, r)
			}
		})
	}
}

// The DSN holds a password: it appears in no error, wrapped or not, and in no log line.
func TestSQLSecretsStaySecret(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Pa55"
	tests := []struct{ driver, dsn string }{
		{"pgx", "postgres://reader:" + secret + "@127.0.0.1:1/crm?connect_timeout=2"},
		{"pgx", "host=127.0.0.1 port=1 user=reader password=" + secret + " dbname=crm connect_timeout=2"},
		{"pgx", "postgres://reader:" + secret + "@127.0.0.1:notaport/crm"},
		{"postgres", "postgres://reader:" + secret + "@[::1/crm"},
		{"mysql", "reader:" + secret + "@tcp(127.0.0.1:1)/crm?timeout=2s"},
		{"mysql", "reader:" + secret + "@tcp(127.0.0.1:1)crm"},
		{"mysql", "root:" + secret + "@tcp(127.0.0.1:3306)/test?timeout=2s"},
		{"oracle", "oracle://reader:" + secret + "@db.internal/crm"},
	}
	for _, tt := range tests {
		t.Run(tt.driver, func(t *testing.T) {
			t.Parallel()
			_, err := sources.OpenSQL(context.Background(), sources.SQLOptions{Driver: tt.driver, DSN: tt.dsn, Query: "SELECT 1"})
			require.Error(t, err)
			for _, e := range errorTree(err) {
				require.NotContains(t, e.Error(), secret)
				require.NotContains(t, fmt.Sprintf("%+v %#v", e, e), secret)
			}
			cfg := sources.Config{Kind: sources.KindSQL, Driver: tt.driver, DSN: tt.dsn}
			var logs bytes.Buffer
			slog.New(slog.NewJSONHandler(&logs, nil)).Info("open", "source", cfg)
			require.NotContains(t, logs.String(), secret)
			require.NotContains(t, cfg.String(), secret)
			require.NotContains(t, fmt.Sprintf("%v %+v %s", cfg, cfg, cfg), secret)
		})
	}
}

// errorTree returns err and every error it wraps.
func errorTree(err error) []error {
	if err == nil {
		return nil
	}
	all := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		all = append(all, errorTree(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			all = append(all, errorTree(e)...)
		}
	}
	return all
}

func TestSQLOpenErrors(t *testing.T) {
	t.Parallel()
	dsn := filepath.Join(t.TempDir(), "crm.db")
	db, err := sql.Open("sqlite", dsn)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE TABLE contacts (email TEXT)")
	require.NoError(t, err)
	tests := []struct {
		name    string
		opts    sources.SQLOptions
		wantHas string
	}{
		{"no driver", sources.SQLOptions{DSN: dsn, Query: "SELECT 1"}, "driver: missing"},
		{"no dsn", sources.SQLOptions{Driver: "sqlite", Query: "SELECT 1"}, "dsn: missing"},
		{"no query", sources.SQLOptions{Driver: "sqlite", DSN: dsn, Query: "  "}, "query: missing"},
		{"watermark without column", sources.SQLOptions{Driver: "sqlite", DSN: dsn, Query: "SELECT email FROM contacts", Watermark: "5"}, "without a watermark column"},
		{"watermark column not in the query", sources.SQLOptions{Driver: "sqlite", DSN: dsn, Query: "SELECT email FROM contacts", WatermarkColumn: "updated_at"}, `watermark column "updated_at" is not a column of the query ("email")`},
		{"watermark column not in the query, with a watermark", sources.SQLOptions{Driver: "sqlite", DSN: dsn, Query: "SELECT email FROM contacts", WatermarkColumn: "updated_at", Watermark: "1"}, `watermark column "updated_at" is not a column of the query ("email")`},
		{"a syntax error", sources.SQLOptions{Driver: "sqlite", DSN: dsn, Query: "SELEKT email FROM contacts"}, "it starts with SELEKT, not SELECT or WITH"},
		{"a missing table", sources.SQLOptions{Driver: "sqlite", DSN: dsn, Query: "SELECT email FROM kontakter"}, "query: "},
		{"an unknown driver", sources.SQLOptions{Driver: "oracle", DSN: "x", Query: "SELECT 1"}, `unknown driver "oracle"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := sources.OpenSQL(context.Background(), tt.opts)
			require.Nil(t, r)
			require.ErrorContains(t, err, tt.wantHas)
		})
	}
}

func TestSQLHeaderAndEOF(t *testing.T) {
	t.Parallel()
	b := backend("pgx")
	_, dsn := b.db(t)
	r := openSQL(t, sources.SQLOptions{Driver: "pgx", DSN: dsn, Query: `SELECT 'a@x.no' AS "E-post", 1 AS "Id", 2 AS "e-post"`})
	require.Equal(t, []string{"E-post", "Id", "e-post (2)"}, r.Header())
	rec, err := r.Next(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"a@x.no", "1", "2"}, rec.Values)
	_, err = r.Next(context.Background())
	require.True(t, errors.Is(err, io.EOF))
	require.Equal(t, sources.Progress{Rows: 1}, r.Progress())
}

// closePromptly closes r and fails if that takes long: a reader that read the rest of an
// endless result (as MySQL's driver does when a result is closed early) would never return.
func closePromptly(t *testing.T, r sources.Reader) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return in 30s: it reads the rest of the result")
	}
}
