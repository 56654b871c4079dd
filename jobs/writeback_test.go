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

func TestBindNamed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, stmt, driver string
		wantQuery          string
		wantParams         []string
		wantErr            string
	}{
		{name: "pgx numbers each name once",
			stmt:   "UPDATE c SET s = :status, at = :changed_at::timestamptz WHERE email = :email AND s <> :status",
			driver: "pgx", wantQuery: "UPDATE c SET s = $1, at = $2::timestamptz WHERE email = $3 AND s <> $1",
			wantParams: []string{"status", "changed_at", "email"}},
		{name: "question marks, one per use", stmt: "UPDATE c SET s = :status WHERE email = :email OR s = :status",
			driver: "mysql", wantQuery: "UPDATE c SET s = ? WHERE email = ? OR s = ?",
			wantParams: []string{"status", "email", "status"}},
		{name: "quotes and comments are left alone",
			stmt:   "UPDATE \"t:x\" SET note = 'it''s :status' /* :email */ -- :nope\n, s = :status WHERE id = :subscriber_id",
			driver: "sqlite", wantQuery: "UPDATE \"t:x\" SET note = 'it''s :status' /* :email */ -- :nope\n, s = ? WHERE id = ?",
			wantParams: []string{"status", "subscriber_id"}},
		{name: "mysql backslash escapes", stmt: `UPDATE c SET note = 'a\':email' WHERE email = :email`, driver: "mysql",
			wantQuery: `UPDATE c SET note = 'a\':email' WHERE email = ?`, wantParams: []string{"email"}},
		{name: "every parameter", stmt: "INSERT INTO log VALUES (:email, :status, :status_mobile, :changed_at, :subscriber_id, :list_id)",
			driver: "pgx", wantQuery: "INSERT INTO log VALUES ($1, $2, $3, $4, $5, $6)",
			wantParams: []string{"email", "status", "status_mobile", "changed_at", "subscriber_id", "list_id"}},
		{name: "unknown", stmt: "UPDATE c SET s = :state WHERE email = :email", driver: "pgx", wantErr: "unknown parameter :state"},
		{name: "positional ?", stmt: "UPDATE c SET s = ? WHERE email = :email", driver: "sqlite", wantErr: "positional placeholder"},
		{name: "positional $1", stmt: "UPDATE c SET s = $1", driver: "pgx", wantErr: "positional placeholder"},
		{name: "none", stmt: "UPDATE c SET s = 'x'", driver: "pgx", wantErr: "uses no parameter"},
		{name: "empty", stmt: "  ", driver: "pgx", wantErr: "empty"},
		{name: "unterminated", stmt: "UPDATE c SET s = 'x WHERE email = :email", driver: "pgx", wantErr: "unterminated ' quote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns, err := bindNamed(tt.stmt, tt.driver)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantQuery, ns.query)
			require.Equal(t, tt.wantParams, ns.params)
		})
	}
	// The example of config.example.toml.
	require.NoError(t, CheckWriteBackStatement(`
UPDATE contacts SET newsletter_status = :status, newsletter_changed_at = :changed_at
WHERE lower(email) = :email
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
	err = wb.write(ctx, []state.WriteBack{change("a@example.com", "bounce", 1), change("b@example.com", "unsubscribed", 0)})
	require.ErrorContains(t, err, "b@example.com")
	statusOf := func(email string) string {
		var st string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT status FROM contacts WHERE email = ?", email).Scan(&st))
		return st
	}
	require.Equal(t, "active", statusOf("a@example.com"), "one transaction: all or nothing")

	require.NoError(t, wb.write(ctx, []state.WriteBack{change("a@example.com", "bounce", 1), change("b@example.com", "unsubscribed", 2)}))
	require.Equal(t, "bounce", statusOf("a@example.com"))
	require.Equal(t, "unsubscribed", statusOf("b@example.com"))
	var changedAt sql.NullString
	require.NoError(t, db.QueryRowContext(ctx, "SELECT changed_at FROM contacts WHERE email = 'a@example.com'").Scan(&changedAt))
	require.Contains(t, changedAt.String, "2025-03-01 10:00:00")
}
