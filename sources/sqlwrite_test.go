package sources_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

func TestBindSQL(t *testing.T) {
	t.Parallel()
	params := []string{"email", "status", "status_mobile", "changed_at", "subscriber_id", "list_id"}
	tests := []struct {
		name, stmt, driver string
		wantQuery          string
		wantParams         []string
		wantErr            string
	}{
		{name: "pgx numbers each name once",
			stmt:   "UPDATE c SET s = :status, at = :changed_at::timestamptz WHERE email = :email AND s <> :status",
			driver: "postgres", wantQuery: "UPDATE c SET s = $1, at = $2::timestamptz WHERE email = $3 AND s <> $1",
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
			ns, err := sources.BindSQL(tt.driver, tt.stmt, params)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantQuery, ns.Query())
			require.Equal(t, tt.wantParams, ns.Params())
		})
	}
}

// statusRows are rows of (email, status) for ExecSQL.
type statusRows [][2]string

func (r statusRows) Len() int              { return len(r) }
func (r statusRows) Describe(i int) string { return r[i][0] }
func (r statusRows) Arg(i int, name string) any {
	if name == "email" {
		return r[i][0]
	}
	return r[i][1]
}

// TestExecSQL writes with the same driver names and DSNs the SQL source reads with, on
// every database: all rows or none.
func TestExecSQL(t *testing.T) {
	t.Parallel()
	for _, b := range sqlBackends {
		t.Run(b.driver, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, dsn := b.db(t)
			b.exec(t, db, "CREATE TABLE contacts (email VARCHAR(100) PRIMARY KEY, status VARCHAR(20) NOT NULL CHECK (status <> 'bad'))")
			b.exec(t, db, "INSERT INTO contacts VALUES ('a@x.no', 'active'), ('b@x.no', 'active')")
			driver := b.driver
			if driver == "pgx" {
				driver = "postgresql" // any spelling of Postgres the configuration accepts
			}
			stmt, err := sources.BindSQL(driver, "UPDATE contacts SET status = :status WHERE email = :email", []string{"email", "status"})
			require.NoError(t, err)
			read := func() []string {
				r := openSQL(t, sources.SQLOptions{Driver: driver, DSN: dsn, Query: "SELECT status FROM contacts ORDER BY email"})
				var got []string
				for {
					rec, err := r.Next(ctx)
					if err != nil {
						break
					}
					got = append(got, rec.Values[0])
				}
				return got
			}
			_, err = sources.ExecSQL(ctx, dsn, stmt, statusRows{{"a@x.no", "bounce"}, {"b@x.no", "bad"}})
			require.ErrorContains(t, err, "b@x.no")
			require.Equal(t, []string{"active", "active"}, read(), "one transaction: all rows or none")
			matched, err := sources.ExecSQL(ctx, dsn, stmt, statusRows{{"a@x.no", "bounce"}, {"b@x.no", "unsubscribed"}})
			require.NoError(t, err)
			require.Equal(t, []int64{1, 1}, matched)
			require.Equal(t, []string{"bounce", "unsubscribed"}, read())
			// What each row matched: a row already holding the value is matched (MySQL and
			// MariaDB count it too), an address the table lacks matches nothing.
			matched, err = sources.ExecSQL(ctx, dsn, stmt, statusRows{{"a@x.no", "bounce"}, {"nobody@x.no", "bounce"}})
			require.NoError(t, err)
			require.Equal(t, []int64{1, 0}, matched)
		})
	}
}
