package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Dialect names the SQL database a Store runs on.
type Dialect int

// The supported dialects.
const (
	SQLite Dialect = iota + 1
	Postgres
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// nowExpr is the database clock in Unix microseconds. Leases use it, so workers on machines
// whose clocks differ still agree on when a lease has expired.
func (d Dialect) nowExpr() string {
	if d == Postgres {
		return "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT"
	}
	return "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)"
}

// Store reads and writes subsync's tables. It is safe for concurrent use.
type Store struct {
	db *sql.DB
	d  Dialect

	keyMu sync.Mutex
	key   []byte // the erasure key, once read (see ErasureKey)
}

// New returns a Store over db. For SQLite, open db with [OpenSQLite]: the Store relies on its
// settings (WAL, busy timeout, immediate transactions). Call [Migrate] before use.
func New(db *sql.DB, d Dialect) *Store {
	return &Store{db: db, d: d}
}

// DB returns the underlying database handle.
func (s *Store) DB() *sql.DB { return s.db }

// Dialect returns the dialect the Store was created with.
func (s *Store) Dialect() Dialect { return s.d }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s database: %w", s.d, err)
	}
	return nil
}

// SQLiteDSN returns the database/sql DSN (driver "sqlite") subsync uses for the SQLite file at
// path: WAL journal, a 5 s busy timeout, synchronous=NORMAL (durable across a killed process;
// the last commits may be lost on power loss), foreign keys on, secure_delete (what is deleted
// is overwritten with zeros, so an erased address stays in no free page), and transactions that
// take the write lock when they begin, so concurrent writers wait instead of failing with
// SQLITE_BUSY.
func SQLiteDSN(path string) (string, error) {
	if strings.ContainsAny(path, "?#") {
		return "", fmt.Errorf("sqlite path %q: must not contain '?' or '#'", path)
	}
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)" +
		"&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_pragma=secure_delete(1)&_txlock=immediate", nil
}

// OpenSQLite opens (creating it and its directory if needed) the SQLite database at path with
// the settings of [SQLiteDSN].
func OpenSQLite(ctx context.Context, path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	dsn, err := SQLiteDSN(path)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return db, nil
}

// Sentinel errors callers decide by.
var (
	// ErrNotFound: no such run (or staged file).
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost: the caller no longer owns the run; another worker took it over.
	ErrLeaseLost = errors.New("run lease lost to another worker")
	// ErrLeaseHeld: another live worker owns the run.
	ErrLeaseHeld = errors.New("run is being worked by another worker")
	// ErrRunFinished: the run already reached a final state.
	ErrRunFinished = errors.New("run already finished")
)

// micros converts t to Unix microseconds; the zero time is 0.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromMicros is the inverse of micros.
func fromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

// param appends the placeholder of the n-th (1-based) parameter. Statements built with it
// must use their parameters in order: SQLite gets "?", because modernc binds "$n" by name
// lookup, which costs quadratic time in statements with thousands of parameters.
func (d Dialect) param(b *strings.Builder, n int) {
	if d == SQLite {
		b.WriteByte('?')
		return
	}
	b.WriteByte('$')
	b.WriteString(strconv.Itoa(n))
}

// bulkRows is how many rows one multi-row statement carries. modernc's binding scans the
// argument list once per parameter, so SQLite statements stay small.
func (d Dialect) bulkRows() int {
	if d == SQLite {
		return 100
	}
	return 1000
}

// placeholders appends "(…),(…)" groups for rows×cols parameters, numbered from start.
func (d Dialect) placeholders(b *strings.Builder, rows, cols, start int) {
	n := start
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := 0; c < cols; c++ {
			if c > 0 {
				b.WriteByte(',')
			}
			d.param(b, n)
			n++
		}
		b.WriteByte(')')
	}
}

// inTx runs fn in a transaction, committing on nil and rolling back otherwise.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
