// Package testdb gives tests real databases: a fresh Postgres schema per test, a fresh
// MariaDB/MySQL database per test. Without a server, tests skip on a developer laptop and
// fail when CI=true, so CI can never pass by skipping.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultPostgresURL is used when TEST_DATABASE_URL is not set.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// DefaultMySQLDSN is used when TEST_MYSQL_DSN is not set.
const DefaultMySQLDSN = "root@tcp(127.0.0.1:3306)/test"

func unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s unavailable with CI=true: %v", what, err)
	}
	t.Skipf("%s unavailable (set CI=true to fail instead): %v", what, err)
}

// Name returns a short random identifier usable as a schema or database name.
func Name(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// PostgresURL returns TEST_DATABASE_URL (or its default) after checking a server answers.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		u = DefaultPostgresURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, u)
	if err == nil {
		err = pool.Ping(ctx)
		pool.Close()
	}
	if err != nil {
		unavailable(t, "postgres", err)
	}
	return u
}

// PostgresSchema creates a fresh schema, dropped at cleanup, and returns a URL whose
// connections use it as their search_path, together with the schema's name.
func PostgresSchema(t testing.TB) (dbURL, schema string) {
	t.Helper()
	base := PostgresURL(t)
	schema = Name("t")
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, base)
	if err != nil {
		t.Fatalf("connect postgres: %v", err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		pool, err := pgxpool.New(context.Background(), base)
		if err != nil {
			return
		}
		defer pool.Close()
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), schema
}

// Postgres returns a pool on a fresh schema (see PostgresSchema), closed at cleanup.
func Postgres(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u, _ := PostgresSchema(t)
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatalf("connect postgres: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// MySQL returns a *sql.DB on a fresh MariaDB/MySQL database, dropped at cleanup.
// The caller must import a driver registered as "mysql" (github.com/go-sql-driver/mysql).
func MySQL(t testing.TB) *sql.DB {
	t.Helper()
	dsn := os.Getenv("TEST_MYSQL_DSN")
	if dsn == "" {
		dsn = DefaultMySQLDSN
	}
	admin, err := sql.Open("mysql", dsn)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = admin.PingContext(ctx)
		cancel()
	}
	if err != nil {
		unavailable(t, "mysql", err)
	}
	name := Name("t")
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP DATABASE " + name)
		_ = admin.Close()
	})
	// Swap the database part of the DSN: user@tcp(host)/db?params.
	slash := strings.LastIndex(dsn, "/")
	if slash < 0 {
		t.Fatalf("TEST_MYSQL_DSN %q has no /database part", dsn)
	}
	rest := ""
	if q := strings.Index(dsn[slash:], "?"); q >= 0 {
		rest = dsn[slash+q:]
	}
	sep := "?"
	if rest != "" {
		sep = "&"
	}
	db, err := sql.Open("mysql", fmt.Sprintf("%s/%s%s%sparseTime=false", dsn[:slash], name, rest, sep))
	if err != nil {
		t.Fatalf("open mysql: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
