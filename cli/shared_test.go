package cli

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
)

// TestImportFromSharedDir (#34 point 1): `subsync import FILE` of a file under one of
// database.shared_dirs (here relative to the configuration file) queues it without copying
// it into the database; a file elsewhere is staged on Postgres.
func TestImportFromSharedDir(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := "[database]\n"
			u := ""
			if backend == "postgres" {
				u, _ = testdb.PostgresSchema(t)
				db += fmt.Sprintf("url = %q\n", u)
			}
			h := setup(t, db+"shared_dirs = [\"share\"]\n")
			list := h.srv.CreateList("Members")
			require.NoError(t, os.Mkdir(filepath.Join(h.dir, "share"), 0o750))
			shared := contacts(t, filepath.Join(h.dir, "share"))
			local := contacts(t, t.TempDir())

			h.ok("import", shared, "--list", fmt.Sprint(list))
			var conn *sql.DB
			var err error
			if backend == "postgres" {
				conn, err = sql.Open("pgx", u)
			} else {
				conn, err = sql.Open("sqlite", filepath.Join(h.dir, "data", "subsync.db"))
			}
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			staged := func() int {
				var n int
				require.NoError(t, conn.QueryRow("SELECT COUNT(*) FROM subsync_staged_file").Scan(&n))
				return n
			}
			require.Zero(t, staged(), "a file under a shared directory is not copied")

			h.ok("import", local, "--list", fmt.Sprint(list))
			if backend == "postgres" {
				require.Equal(t, 1, staged(), "a file elsewhere is staged")
			} else {
				require.Zero(t, staged(), "SQLite stages nothing: one machine")
			}
		})
	}
}
