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
		{"mysql", "SELECT 1 /*! ; DROP TABLE src */", "more than one statement"},
		// Every executable-comment form is code to MySQL or MariaDB, whatever its version.
		{"mysql", "SELECT 1 /*M! ; DROP TABLE src */", "more than one statement"},
		{"mysql", "/*M!100100 TRUNCATE src */", "starts with TRUNCATE"},
		{"mysql", "/*M! CREATE TABLE copy AS */ SELECT email FROM src", "starts with CREATE"},
		{"mysql", "/*!50100 DROP TABLE src */ ;", "starts with DROP"},
		{"mysql", "SELECT email /*!99999 INTO OUTFILE '/tmp/x' */ FROM src", "uses INTO"},
		{"mysql", "SELECT email /*m!INTO @x */ FROM src", "uses INTO"},
		{"mysql", "SELECT 1 /*!+1 /* ; DROP TABLE src */ +2 */", ""}, // a comment inside one
		{"mysql", "SELECT 1 /*!+1 '*/ ; DROP TABLE src' */", ""},     // a string inside one
		{"mysql", "SELECT /*!40001 SQL_NO_CACHE */ email FROM src", ""},
		{"mysql", "SELECT 1 /*M!+1", "not closed"},
		{"mysql", "SELECT 1 /*M! /*!40001 +41 */ +1 */", "holds another"},
		{"mysql", "SELECT 1 */", ""}, // a stray */ outside one is the operators * and /
		{"oracle", "SELECT 1 /*M!100100 ; DROP TABLE src */", "more than one statement"},
		{"pgx", "SELECT 1 /*M! ; DROP TABLE src */", ""},    // Postgres: a comment
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
			refused := []string{"DROP TABLE src", "TRUNCATE src", "TRUNCATE TABLE src", "SELECT 1; DROP TABLE src",
				"DELETE FROM src", "SELECT email FROM src; DELETE FROM src", "ATTACH DATABASE 'x.db' AS x", "PRAGMA query_only = OFF"}
			if b.driver == "mysql" {
				// MariaDB runs what /*M! … */ and /*!NNNNN … */ hold: each is code, not a comment.
				refused = append(refused, "/*M!100100 TRUNCATE src */", "/*M! TRUNCATE src */;", "/*!50100 DROP TABLE src */",
					"/*M! CREATE TABLE copy AS */ SELECT email FROM src", "/*M!100100 CREATE TABLE copy AS */ SELECT email FROM src")
			}
			for _, q := range refused {
				_, err := sources.OpenSQL(context.Background(), sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: q})
				var n int
				require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM src").Scan(&n), q)
				require.Equal(t, 1, n, q)
				require.ErrorIs(t, err, sources.ErrQueryRefused, q)
				if b.driver == "mysql" {
					require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'copy'").Scan(&n))
					require.Zero(t, n, "%s made a table", q)
				}
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
