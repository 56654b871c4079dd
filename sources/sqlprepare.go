package sources

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"

	"github.com/subsync/subsync/internal/secret"
)

// PrepareReadQuery checks, reading nothing, that a SQL source can be read: its query is one
// statement that only reads (CheckReadQuery), the database dsn names connects (an SQLite
// file must exist: it is not created), and the query prepares in a read-only transaction
// that is rolled back (the database checks its syntax, tables and columns; subsync doctor).
// An error never shows the DSN or its password.
func PrepareReadQuery(ctx context.Context, driver, dsn, query string) error {
	if err := CheckReadQuery(driver, query); err != nil {
		return err
	}
	return secret.ScrubDSN(prepareRead(ctx, driver, dsn, query), driver, dsn)
}

func prepareRead(ctx context.Context, driver, dsn, query string) error {
	if driver == "sqlite" {
		path := strings.TrimPrefix(dsn, "file:")
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		if path != ":memory:" && path != "" {
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("connect to the database: the SQLite file does not exist or cannot be read: %w", err)
			}
		}
	}
	db, err := sql.Open(databaseSQLDriver(driver), dsn)
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect to the database: %w", err)
	}
	defer conn.Close()
	if driver == "sqlite" {
		if _, err := conn.ExecContext(ctx, "PRAGMA query_only = ON"); err != nil {
			return fmt.Errorf("connect to the database: %w", err)
		}
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("connect to the database: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, trimQuery(query))
	if err != nil {
		return fmt.Errorf("prepare the query: %w", err)
	}
	return stmt.Close()
}
