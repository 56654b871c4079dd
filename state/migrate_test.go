package state_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/state"
)

// The databases in testdata/release-v9 were made by the release whose newest schema version
// was 9 (commit d90047d), before the migrations moved into embedded files:
//   - subsync.sqlite: the queue database `subsync demo --keep` left behind (five runs);
//   - postgres.sql: `pg_dump -n relv9 -t 'relv9.subsync_*' --no-owner --no-privileges --inserts`
//     of a schema where that release ran `subsync migrate` and one `subsync import --wait` of the
//     demo's kontakter.csv (one run, 292 sent, 6 rejected).
const releaseVersion = 9

// newerVersions are the versions this build applies to a database of that release.
func newerVersions() []int {
	var v []int
	for _, n := range state.Versions() {
		if n > releaseVersion {
			v = append(v, n)
		}
	}
	return v
}

func TestMigrateFromRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		b, err := os.ReadFile(filepath.Join("testdata", "release-v9", "subsync.sqlite"))
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "subsync.db")
		require.NoError(t, os.WriteFile(path, b, 0o600))
		old, err := state.OpenSQLite(ctx, path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = old.Close() })

		applied, err := state.Migrate(ctx, old, state.SQLite)
		require.NoError(t, err)
		require.Equal(t, newerVersions(), applied, "only the versions the release did not have")
		requireCount(t, old, "SELECT COUNT(*) FROM subsync_run WHERE state = 'completed'", 5)

		fresh := newSQLite(t).DB()
		require.Equal(t, sqliteSchema(t, fresh), sqliteSchema(t, old),
			"a database of the release, upgraded, has the schema of a fresh one")
	})

	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		u, schema := testdb.PostgresSchema(t)
		old, err := sql.Open("pgx", u)
		require.NoError(t, err)
		t.Cleanup(func() { _ = old.Close() })
		dump, err := os.ReadFile(filepath.Join("testdata", "release-v9", "postgres.sql"))
		require.NoError(t, err)
		_, err = old.ExecContext(ctx, restoreScript(string(dump), schema))
		require.NoError(t, err)

		applied, err := state.Migrate(ctx, old, state.Postgres)
		require.NoError(t, err)
		require.Equal(t, newerVersions(), applied, "only the versions the release did not have")
		requireCount(t, old, "SELECT COUNT(*) FROM subsync_run WHERE state = 'completed' AND rows_sent = 292", 1)

		fresh := newPostgres(t).DB()
		require.Equal(t, postgresSchema(t, fresh), postgresSchema(t, old),
			"a database of the release, upgraded, has the schema of a fresh one")
	})
}

// restoreScript turns the dump into one script for the schema: psql's meta-commands and the
// dump's emptying of the search path go, and the dump's schema name becomes the test's.
func restoreScript(dump, schema string) string {
	var b strings.Builder
	for line := range strings.Lines(dump) {
		if strings.HasPrefix(line, `\`) || strings.Contains(line, "set_config('search_path'") {
			continue
		}
		b.WriteString(strings.ReplaceAll(line, "relv9.", schema+"."))
	}
	return b.String()
}

func requireCount(t *testing.T, db *sql.DB, query string, want int) {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(context.Background(), query).Scan(&n))
	require.Equal(t, want, n, query)
}

// sqliteSchema is every subsync table's and index's definition, by name.
func sqliteSchema(t *testing.T, db *sql.DB) []string {
	t.Helper()
	return queryStrings(t, db, `SELECT type || ' ' || name || ': ' || COALESCE(sql, '')
FROM sqlite_master WHERE name LIKE 'subsync%' ORDER BY name`)
}

// postgresSchema is every subsync table's columns and indexes, without the schema's name.
func postgresSchema(t *testing.T, db *sql.DB) []string {
	t.Helper()
	cols := queryStrings(t, db, `SELECT table_name || '.' || column_name || ' ' || data_type || ' ' ||
    is_nullable || ' ' || COALESCE(column_default, '')
FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name LIKE 'subsync%'
ORDER BY table_name, column_name`)
	idx := queryStrings(t, db, `SELECT indexdef FROM pg_indexes
WHERE schemaname = current_schema() AND tablename LIKE 'subsync%' ORDER BY indexname`)
	cons := queryStrings(t, db, `SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace = current_schema()::regnamespace ORDER BY 1`)
	schemaName := regexp.MustCompile(`\bt_[0-9a-f]{12}\.`)
	var out []string
	for _, s := range append(append(cols, idx...), cons...) {
		out = append(out, schemaName.ReplaceAllString(s, ""))
	}
	return out
}

func queryStrings(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), query)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, out, query)
	return out
}
