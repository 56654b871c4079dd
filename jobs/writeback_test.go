package jobs

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

func TestCheckWriteBackStatement(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, CheckWriteBackStatement("UPDATE c SET s = :state WHERE email = :email"), "unknown parameter :state")
	// The example of config.example.toml.
	require.NoError(t, CheckWriteBackStatement(`
UPDATE contacts SET newsletter_status = :status, newsletter_changed_at = :changed_at
WHERE lower(trim(email)) = :email
  AND (newsletter_changed_at IS NULL OR newsletter_changed_at <= :changed_at)`))
}

// TestSQLWriteBackSQLite writes back into a SQLite source, all changes or none.
func TestSQLWriteBackSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crm.db")
	db, err := state.OpenSQLite(ctx, path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, `CREATE TABLE contacts (email TEXT PRIMARY KEY, status TEXT NOT NULL DEFAULT 'active',
    changed_at TEXT, subscriber_id INTEGER CHECK (subscriber_id > 0));
INSERT INTO contacts (email) VALUES ('a@example.com'), ('b@example.com')`)
	require.NoError(t, err)
	dsn, err := state.SQLiteDSN(path)
	require.NoError(t, err)
	wb, err := newWriteBacker(WriteBackSpec{Kind: WriteBackSQL, Driver: "sqlite", DSN: dsn,
		Statement: "UPDATE contacts SET status = :status, changed_at = :changed_at, subscriber_id = :subscriber_id WHERE email = :email"})
	require.NoError(t, err)
	at := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	change := func(email, status string, id int64) state.WriteBack {
		return state.WriteBack{Change: state.StatusChange{Email: email, Status: status, SubscriberID: id, ChangedAt: at}}
	}
	// The second change breaks the CHECK: nothing is written.
	_, err = wb.write(ctx, []state.WriteBack{change("a@example.com", "bounce", 1), change("b@example.com", "unsubscribed", 0)})
	require.ErrorContains(t, err, "b@example.com")
	statusOf := func(email string) string {
		var st string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT status FROM contacts WHERE email = ?", email).Scan(&st))
		return st
	}
	require.Equal(t, "active", statusOf("a@example.com"), "one transaction: all or nothing")

	matched, err := wb.write(ctx, []state.WriteBack{change("a@example.com", "bounce", 1), change("b@example.com", "unsubscribed", 2),
		change("nobody@example.com", "bounce", 3)})
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, false}, matched, "an address the table lacks matches no row")
	require.Equal(t, "bounce", statusOf("a@example.com"))
	require.Equal(t, "unsubscribed", statusOf("b@example.com"))
	var changedAt sql.NullString
	require.NoError(t, db.QueryRowContext(ctx, "SELECT changed_at FROM contacts WHERE email = 'a@example.com'").Scan(&changedAt))
	require.Contains(t, changedAt.String, "2025-03-01 10:00:00")
}
