package state

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// migration is one versioned schema change, with its SQL per dialect. The SQL lives in
// embedded files, migrations/<dialect>/NNN_name.up.sql, one per version and dialect, whose
// first line is a comment naming the change; statements are separated by ";\n". Versions are
// never edited once released: add a new file (for both dialects).
type migration struct {
	version  int
	name     string
	sqlite   string
	postgres string
}

//go:embed migrations/sqlite/*.up.sql migrations/postgres/*.up.sql
var migrationFiles embed.FS

// migrations lists subsync's schema in order of version.
var migrations = mustLoadMigrations(migrationFiles)

// mustLoadMigrations reads the embedded files. A file set that does not pair up (a version
// for one dialect only, a name that is not NNN_name.up.sql, two files of one version) is a
// mistake of the build, not of the user's database: it panics, so every test catches it.
func mustLoadMigrations(fsys fs.FS) []migration {
	m, err := loadMigrations(fsys)
	if err != nil {
		panic(err)
	}
	return m
}

func loadMigrations(fsys fs.FS) ([]migration, error) {
	byVersion := map[int]*migration{}
	for _, d := range []Dialect{SQLite, Postgres} {
		dir := "migrations/" + d.String()
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", dir, err)
		}
		for _, e := range entries {
			version, err := migrationVersion(e.Name())
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", dir, e.Name(), err)
			}
			b, err := fs.ReadFile(fsys, dir+"/"+e.Name())
			if err != nil {
				return nil, fmt.Errorf("read %s/%s: %w", dir, e.Name(), err)
			}
			name, body, ok := strings.Cut(string(b), "\n")
			name, hasName := strings.CutPrefix(name, "-- ")
			if !ok || !hasName {
				return nil, fmt.Errorf("%s/%s: the first line must be a comment naming the change", dir, e.Name())
			}
			m := byVersion[version]
			if m == nil {
				m = &migration{version: version, name: name}
				byVersion[version] = m
			}
			text := &m.sqlite
			if d == Postgres {
				text = &m.postgres
			}
			if *text != "" {
				return nil, fmt.Errorf("%s: two files of version %03d", dir, version)
			}
			*text = body
		}
	}
	out := make([]migration, 0, len(byVersion))
	for _, m := range byVersion {
		if m.sqlite == "" || m.postgres == "" {
			return nil, fmt.Errorf("migration %03d (%s) has no file for one of the dialects", m.version, m.name)
		}
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// migrationVersion reads the version of a file named NNN_name.up.sql.
func migrationVersion(file string) (int, error) {
	num, rest, ok := strings.Cut(file, "_")
	version, err := strconv.Atoi(num)
	if !ok || err != nil || len(num) != 3 || !strings.HasSuffix(rest, ".up.sql") || len(rest) == len(".up.sql") {
		return 0, errors.New("want a name of the form NNN_name.up.sql")
	}
	return version, nil
}

// migrationLockKey is the Postgres advisory lock that serialises concurrent migrators.
const migrationLockKey = 0x5ab5_c0de

// Migrate creates or upgrades subsync's tables. It is idempotent, applies all pending
// versions in one transaction, and is safe to run from several processes at once (Postgres
// serialises them with an advisory lock, SQLite with its write lock).
// It returns the versions it applied.
func Migrate(ctx context.Context, db *sql.DB, d Dialect) ([]int, error) {
	var applied []int
	s := New(db, d)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if d == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey); err != nil {
				return fmt.Errorf("lock migrations: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS subsync_migration (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at BIGINT  NOT NULL
)`); err != nil {
			return fmt.Errorf("create subsync_migration: %w", err)
		}
		done := map[int]bool{}
		rows, err := tx.QueryContext(ctx, "SELECT version FROM subsync_migration")
		if err != nil {
			return fmt.Errorf("read subsync_migration: %w", err)
		}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				_ = rows.Close()
				return fmt.Errorf("read subsync_migration: %w", err)
			}
			done[v] = true
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read subsync_migration: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read subsync_migration: %w", err)
		}
		for _, m := range migrations {
			if done[m.version] {
				continue
			}
			text := m.sqlite
			if d == Postgres {
				text = m.postgres
			}
			for _, stmt := range strings.Split(text, ";\n") {
				if strings.TrimSpace(stmt) == "" {
					continue
				}
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migration %03d (%s): %w", m.version, m.name, err)
				}
			}
			if _, err := tx.ExecContext(ctx,
				"INSERT INTO subsync_migration (version, name, applied_at) VALUES ($1, $2, "+d.nowExpr()+")",
				m.version, m.name); err != nil {
				return fmt.Errorf("record migration %03d: %w", m.version, err)
			}
			applied = append(applied, m.version)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate subsync tables (%s): %w", d, err)
	}
	return applied, nil
}

// Versions lists the schema versions this build knows, oldest first. Versions are not
// always contiguous: a version is numbered when its work starts, and they are released in
// any order.
func Versions() []int {
	v := make([]int, len(migrations))
	for i, m := range migrations {
		v[i] = m.version
	}
	return v
}

// LatestVersion is the newest schema version this build knows.
func LatestVersion() int { return migrations[len(migrations)-1].version }
