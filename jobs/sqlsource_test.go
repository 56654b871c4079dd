package jobs_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestSQLSourceNeverSucceedsFailsAtOnce: a source query that writes is refused before the
// worker starts (jobs.Config.Validate, the rule config check runs too), naming the source; one
// that can never succeed (a syntax error, a missing table) fails the import or sync at its
// first attempt, and Wait returns; the table is left as it was.
func TestSQLSourceNeverSucceedsFailsAtOnce(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		dsn, db := sqliteSource(t, "CREATE TABLE src (email TEXT); INSERT INTO src VALUES ('a@example.com')")

		writes := jobs.Config{DataDir: t.TempDir(), Sources: map[string]sources.Config{
			"drop": {Kind: sources.KindSQL, Driver: "sqlite", DSN: dsn, Query: "DROP TABLE src"},
			"two":  {Kind: sources.KindSQL, Driver: "sqlite", DSN: dsn, Query: "SELECT email FROM src; DROP TABLE src"},
		}}
		err := writes.Validate()
		require.ErrorContains(t, err, `Sources[drop].Query: "DROP TABLE src"`)
		require.ErrorContains(t, err, "Sources[two].Query")

		cases := map[string]string{
			"syntax":        "SELECT email FROM src WHERE",
			"missing_table": "SELECT email FROM kontakter",
		}
		b.cfg.Sources = map[string]sources.Config{}
		for name, q := range cases {
			b.cfg.Sources[name] = sources.Config{Kind: sources.KindSQL, Driver: "sqlite", DSN: dsn, Query: q}
			b.cfg.Syncs = append(b.cfg.Syncs, jobs.SyncSpec{Name: name, ListID: b.listID,
				Source: sources.Config{Kind: sources.KindSQL, Driver: "sqlite", DSN: dsn, Query: q}})
		}
		rt := b.open(t)
		for name := range cases {
			id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Source: name, ListID: b.listID})
			require.NoError(t, err)
			run, err := rt.Wait(ctx, id, nil)
			require.ErrorIs(t, err, jobs.ErrRunFailed, name)
			require.Equal(t, state.RunFailed, run.State, name)
			require.Equal(t, 1, run.Attempts, name)
			require.Contains(t, run.Error, "sql source", name)

			id, err = rt.EnqueueSync(ctx, name, true)
			require.NoError(t, err)
			run, err = rt.Wait(ctx, id, nil)
			require.ErrorIs(t, err, jobs.ErrRunFailed, name)
			require.Equal(t, 1, run.Attempts, name)
		}
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM src").Scan(&n))
		require.Equal(t, 1, n)
		require.Empty(t, b.emu.ListSubscribers(b.listID))
	})
}

// TestSQLSourceBadConnectionFailsAtOnce: a source whose DSN the driver cannot read, or whose
// server refuses the password (MariaDB's 1045), fails the import or sync at its first attempt
// and Wait returns; the run's error says why and never holds the password. Both queues.
func TestSQLSourceBadConnectionFailsAtOnce(t *testing.T) {
	t.Parallel()
	const pass = "wrong-pass-that-must-not-show"
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		testdb.MySQL(t) // a server answers (skips without one, unless CI=true)
		dsn := os.Getenv("TEST_MYSQL_DSN")
		if dsn == "" {
			dsn = testdb.DefaultMySQLDSN
		}
		wrong, err := mysql.ParseDSN(dsn)
		require.NoError(t, err)
		wrong.Passwd = pass
		cases := []struct{ name, driver, dsn, want string }{
			{"malformed", "mysql", "root:" + pass + "@tcp(127.0.0.1:3306)test", "invalid DSN"},
			{"password", "mysql", wrong.FormatDSN(), "Access denied"},
			{"pgx_malformed", "pgx", "postgres://crm:" + pass + "@127.0.0.1:notaport/crm", "cannot parse"},
		}
		b := setup(t, backend)
		for _, c := range cases {
			b.cfg.Syncs = append(b.cfg.Syncs, jobs.SyncSpec{Name: c.name, ListID: b.listID,
				Source: sources.Config{Kind: sources.KindSQL, Driver: c.driver, DSN: c.dsn, Query: "SELECT 'a@example.com' AS email"}})
		}
		rt := b.open(t)
		for _, c := range cases {
			id, err := rt.EnqueueSync(ctx, c.name, true)
			require.NoError(t, err)
			// The deadline only keeps a broken build from hanging the suite: the run fails in
			// well under a second.
			waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
			run, err := rt.Wait(waitCtx, id, nil)
			cancel()
			require.ErrorIs(t, err, jobs.ErrRunFailed, c.name)
			require.Equal(t, state.RunFailed, run.State, c.name)
			require.Equal(t, 1, run.Attempts, c.name)
			require.Contains(t, run.Error, c.want, c.name)
			require.NotContains(t, run.Error, pass, c.name)
		}
		queued, err := rt.Jobs(ctx)
		require.NoError(t, err)
		require.Empty(t, queued, "nothing left to retry")
		require.NotContains(t, b.logs.String(), pass)
	})
}
