package sources_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

func TestCheckReadQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		driver, query string
		wantErr       string // "" = accepted
	}{
		{"sqlite", "SELECT email FROM contacts", ""},
		{"sqlite", "  select email from contacts ; \n -- the end\n", ""},
		{"pgx", "WITH a AS (SELECT email FROM c) SELECT * FROM a;", ""},
		{"mysql", "SELECT 'DROP TABLE x; DELETE' AS s, `update` FROM c -- ; drop table c", ""},
		{"pgx", "SELECT $$;DROP TABLE c$$, $t$ ' $t$, \"into\" FROM c", ""},
		{"pgx", "SELECT E'it\\'s; delete' FROM c", ""},
		{"pgx", "/* outer /* nested ; drop */ still comment */ SELECT 1", ""},
		{"sqlite", "SELECT [into] FROM c", ""},
		{"sqlite", "SELECT updated_at, deleted FROM c", ""},
		{"mysql", "SELECT 1 --1", ""},

		{"mysql", "DROP TABLE src", "starts with DROP"},
		{"mysql", "TRUNCATE src", "starts with TRUNCATE"},
		{"mysql", "SELECT 1; DROP TABLE src", "more than one statement"},
		{"mysql", "SELECT 1 /*! ; DROP TABLE src */", "executed by MySQL"},
		{"mysql", "SELECT 'a\\'; DROP TABLE src; -- '", ""}, // one string, as MySQL reads it
		{"mysql", "SELECT 'it\\'s'; DROP TABLE src", "more than one statement"},
		{"mysql", "SELECT 1--1; DROP TABLE src", "more than one statement"},
		{"mysql", "SELECT * FROM src INTO OUTFILE '/tmp/x'", "uses INTO"},
		{"pgx", "SELECT 'a\\'; DROP TABLE src; --'", "more than one statement"},
		{"pgx", "WITH d AS (DELETE FROM src RETURNING *) SELECT * FROM d", "uses DELETE"},
		{"pgx", "SELECT * INTO copy FROM src", "uses INTO"},
		{"pgx", "SELECT * FROM src FOR UPDATE", "uses UPDATE"},
		{"pgx", "SELECT $x$ a $x$; DROP TABLE src", "more than one statement"},
		{"sqlite", "ATTACH DATABASE '/tmp/x.db' AS x", "starts with ATTACH"},
		{"sqlite", "PRAGMA writable_schema = ON", "starts with PRAGMA"},
		{"sqlite", "SELECT 1 /* unclosed", "not closed"},
		{"sqlite", "SELECT 'unclosed", "not closed"},
		{"sqlite", "-- only a comment", "empty"},
		{"sqlite", "WITH a AS (VALUES (1)) DELETE FROM c", "uses DELETE"},
		{"oracle", "SELECT 'a\\'; DROP TABLE src; -- '", "more than one statement"},
	}
	for _, tt := range tests {
		err := sources.CheckReadQuery(tt.driver, tt.query)
		if tt.wantErr == "" {
			require.NoError(t, err, "%s: %s", tt.driver, tt.query)
			continue
		}
		require.ErrorIs(t, err, sources.ErrQueryRefused, "%s: %s", tt.driver, tt.query)
		require.ErrorIs(t, err, sources.ErrQueryNeverSucceeds, "%s: %s", tt.driver, tt.query)
		require.ErrorContains(t, err, tt.wantErr, "%s: %s", tt.driver, tt.query)
	}
}

// TestSQLSourceOnlyRead: on every database, a query that writes is refused before it is sent
// and the table is intact; a query that can never succeed is marked so (no retry fixes it).
func TestSQLSourceOnlyRead(t *testing.T) {
	t.Parallel()
	for _, b := range sqlBackends {
		t.Run(b.driver, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.db(t)
			b.exec(t, db, "CREATE TABLE src (email VARCHAR(100))")
			b.exec(t, db, "INSERT INTO src VALUES ('a@x.no')")
			for _, q := range []string{"DROP TABLE src", "TRUNCATE src", "TRUNCATE TABLE src", "SELECT 1; DROP TABLE src",
				"DELETE FROM src", "SELECT email FROM src; DELETE FROM src", "ATTACH DATABASE 'x.db' AS x", "PRAGMA query_only = OFF"} {
				_, err := sources.OpenSQL(context.Background(), sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: q})
				var n int
				require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM src").Scan(&n), q)
				require.Equal(t, 1, n, q)
				require.ErrorIs(t, err, sources.ErrQueryRefused, q)
				require.ErrorIs(t, err, sources.ErrQueryNeverSucceeds, q)
			}
			for _, q := range []string{"SELEKT email FROM src", "SELECT email FROM missing_table", "SELECT nope FROM src"} {
				_, err := sources.OpenSQL(context.Background(), sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: q})
				require.ErrorIs(t, err, sources.ErrQueryNeverSucceeds, q)
			}
			r := openSQL(t, sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: "SELECT email FROM src;"})
			rec, err := r.Next(context.Background())
			require.NoError(t, err)
			require.Equal(t, []string{"a@x.no"}, rec.Values)
		})
	}
}
