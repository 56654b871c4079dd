package state

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// migration is one versioned schema change, with its SQL per dialect. Statements are
// separated by ";\n". Versions are never edited once released: add a new one.
type migration struct {
	version  int
	name     string
	sqlite   string
	postgres string
}

// migrations lists subsync's schema in order.
var migrations = []migration{
	{
		version: 1,
		name:    "runs, rejects, suppression, status log, fingerprints, staged files, watermarks",
		sqlite: `
CREATE TABLE subsync_run (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id          INTEGER NOT NULL UNIQUE,
    kind            TEXT    NOT NULL,
    name            TEXT    NOT NULL DEFAULT '',
    list_id         INTEGER NOT NULL DEFAULT 0,
    source          TEXT    NOT NULL DEFAULT '',
    state           TEXT    NOT NULL,
    error           TEXT    NOT NULL DEFAULT '',
    position        INTEGER NOT NULL DEFAULT 0,
    total_rows      INTEGER NOT NULL DEFAULT 0,
    bytes_done      INTEGER NOT NULL DEFAULT 0,
    total_bytes     INTEGER NOT NULL DEFAULT 0,
    rows_read       INTEGER NOT NULL DEFAULT 0,
    rows_rejected   INTEGER NOT NULL DEFAULT 0,
    rows_duplicate  INTEGER NOT NULL DEFAULT 0,
    rows_suppressed INTEGER NOT NULL DEFAULT 0,
    rows_unchanged  INTEGER NOT NULL DEFAULT 0,
    rows_sent       INTEGER NOT NULL DEFAULT 0,
    batches         INTEGER NOT NULL DEFAULT 0,
    requests        INTEGER NOT NULL DEFAULT 0,
    retries         INTEGER NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    worker          TEXT    NOT NULL DEFAULT '',
    lease_owner     TEXT    NOT NULL DEFAULT '',
    lease_until     INTEGER NOT NULL DEFAULT 0,
    scheduled_at    INTEGER NOT NULL DEFAULT 0,
    started_at      INTEGER NOT NULL DEFAULT 0,
    updated_at      INTEGER NOT NULL DEFAULT 0,
    finished_at     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX subsync_run_kind_name ON subsync_run (kind, name, id);
CREATE INDEX subsync_run_state ON subsync_run (state);
CREATE TABLE subsync_reject (
    run_id   INTEGER NOT NULL REFERENCES subsync_run (id) ON DELETE CASCADE,
    ordinal  INTEGER NOT NULL,
    line     INTEGER NOT NULL,
    sheet    TEXT    NOT NULL DEFAULT '',
    col      TEXT    NOT NULL DEFAULT '',
    value    TEXT    NOT NULL DEFAULT '',
    code     TEXT    NOT NULL,
    reason   TEXT    NOT NULL,
    PRIMARY KEY (run_id, ordinal)
) WITHOUT ROWID;
CREATE TABLE subsync_suppression (
    list_id    INTEGER NOT NULL,
    email      TEXT    NOT NULL,
    status     TEXT    NOT NULL CHECK (status IN ('unsubscribed', 'bounce')),
    changed_at INTEGER NOT NULL,
    PRIMARY KEY (list_id, email)
) WITHOUT ROWID;
CREATE INDEX subsync_suppression_email ON subsync_suppression (email);
CREATE TABLE subsync_status_change (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    email         TEXT    NOT NULL,
    status        TEXT    NOT NULL,
    status_mobile TEXT    NOT NULL DEFAULT '',
    list_id       INTEGER NOT NULL DEFAULT 0,
    subscriber_id INTEGER NOT NULL DEFAULT 0,
    changed_at    INTEGER NOT NULL,
    recorded_at   INTEGER NOT NULL,
    UNIQUE (email, status, changed_at, list_id)
);
CREATE TABLE subsync_status_cursor (
    name       TEXT    PRIMARY KEY,
    position   INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE subsync_writeback (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    change_id   INTEGER NOT NULL REFERENCES subsync_status_change (id) ON DELETE CASCADE,
    target      TEXT    NOT NULL,
    state       TEXT    NOT NULL DEFAULT 'pending',
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    done_at     INTEGER NOT NULL DEFAULT 0,
    UNIQUE (change_id, target)
);
CREATE INDEX subsync_writeback_pending ON subsync_writeback (target, state, id);
CREATE TABLE subsync_fingerprint (
    list_id INTEGER NOT NULL,
    bucket  INTEGER NOT NULL,
    data    BLOB    NOT NULL,
    PRIMARY KEY (list_id, bucket)
);
CREATE TABLE subsync_staged_file (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT    NOT NULL,
    size       INTEGER NOT NULL DEFAULT 0,
    chunks     INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE TABLE subsync_staged_chunk (
    file_id INTEGER NOT NULL REFERENCES subsync_staged_file (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    data    BLOB    NOT NULL,
    PRIMARY KEY (file_id, seq)
);
CREATE TABLE subsync_watermark (
    name       TEXT    PRIMARY KEY,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
)`,
		postgres: `
CREATE TABLE subsync_run (
    id              BIGSERIAL PRIMARY KEY,
    job_id          BIGINT NOT NULL UNIQUE,
    kind            TEXT   NOT NULL,
    name            TEXT   NOT NULL DEFAULT '',
    list_id         BIGINT NOT NULL DEFAULT 0,
    source          TEXT   NOT NULL DEFAULT '',
    state           TEXT   NOT NULL,
    error           TEXT   NOT NULL DEFAULT '',
    position        BIGINT NOT NULL DEFAULT 0,
    total_rows      BIGINT NOT NULL DEFAULT 0,
    bytes_done      BIGINT NOT NULL DEFAULT 0,
    total_bytes     BIGINT NOT NULL DEFAULT 0,
    rows_read       BIGINT NOT NULL DEFAULT 0,
    rows_rejected   BIGINT NOT NULL DEFAULT 0,
    rows_duplicate  BIGINT NOT NULL DEFAULT 0,
    rows_suppressed BIGINT NOT NULL DEFAULT 0,
    rows_unchanged  BIGINT NOT NULL DEFAULT 0,
    rows_sent       BIGINT NOT NULL DEFAULT 0,
    batches         BIGINT NOT NULL DEFAULT 0,
    requests        BIGINT NOT NULL DEFAULT 0,
    retries         BIGINT NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    worker          TEXT   NOT NULL DEFAULT '',
    lease_owner     TEXT   NOT NULL DEFAULT '',
    lease_until     BIGINT NOT NULL DEFAULT 0,
    scheduled_at    BIGINT NOT NULL DEFAULT 0,
    started_at      BIGINT NOT NULL DEFAULT 0,
    updated_at      BIGINT NOT NULL DEFAULT 0,
    finished_at     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX subsync_run_kind_name ON subsync_run (kind, name, id);
CREATE INDEX subsync_run_state ON subsync_run (state);
CREATE TABLE subsync_reject (
    run_id   BIGINT  NOT NULL REFERENCES subsync_run (id) ON DELETE CASCADE,
    ordinal  BIGINT  NOT NULL,
    line     INTEGER NOT NULL,
    sheet    TEXT    NOT NULL DEFAULT '',
    col      TEXT    NOT NULL DEFAULT '',
    value    TEXT    NOT NULL DEFAULT '',
    code     TEXT    NOT NULL,
    reason   TEXT    NOT NULL,
    PRIMARY KEY (run_id, ordinal)
);
CREATE TABLE subsync_suppression (
    list_id    BIGINT NOT NULL,
    email      TEXT   NOT NULL,
    status     TEXT   NOT NULL CHECK (status IN ('unsubscribed', 'bounce')),
    changed_at BIGINT NOT NULL,
    PRIMARY KEY (list_id, email)
);
CREATE INDEX subsync_suppression_email ON subsync_suppression (email);
CREATE TABLE subsync_status_change (
    id            BIGSERIAL PRIMARY KEY,
    email         TEXT   NOT NULL,
    status        TEXT   NOT NULL,
    status_mobile TEXT   NOT NULL DEFAULT '',
    list_id       BIGINT NOT NULL DEFAULT 0,
    subscriber_id BIGINT NOT NULL DEFAULT 0,
    changed_at    BIGINT NOT NULL,
    recorded_at   BIGINT NOT NULL,
    UNIQUE (email, status, changed_at, list_id)
);
CREATE TABLE subsync_status_cursor (
    name       TEXT   PRIMARY KEY,
    position   BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE subsync_writeback (
    id          BIGSERIAL PRIMARY KEY,
    change_id   BIGINT  NOT NULL REFERENCES subsync_status_change (id) ON DELETE CASCADE,
    target      TEXT    NOT NULL,
    state       TEXT    NOT NULL DEFAULT 'pending',
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT    NOT NULL DEFAULT '',
    created_at  BIGINT  NOT NULL,
    done_at     BIGINT  NOT NULL DEFAULT 0,
    UNIQUE (change_id, target)
);
CREATE INDEX subsync_writeback_pending ON subsync_writeback (target, state, id);
CREATE TABLE subsync_fingerprint (
    list_id BIGINT  NOT NULL,
    bucket  INTEGER NOT NULL,
    data    BYTEA   NOT NULL,
    PRIMARY KEY (list_id, bucket)
);
CREATE TABLE subsync_staged_file (
    id         BIGSERIAL PRIMARY KEY,
    name       TEXT   NOT NULL,
    size       BIGINT NOT NULL DEFAULT 0,
    chunks     INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);
CREATE TABLE subsync_staged_chunk (
    file_id BIGINT  NOT NULL REFERENCES subsync_staged_file (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    data    BYTEA   NOT NULL,
    PRIMARY KEY (file_id, seq)
);
CREATE TABLE subsync_watermark (
    name       TEXT   PRIMARY KEY,
    value      TEXT   NOT NULL,
    updated_at BIGINT NOT NULL
)`,
	},
	{
		version: 2,
		name:    "counters (the suppression list's version), status changes by time",
		sqlite: `
CREATE TABLE subsync_counter (
    name  TEXT    PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO subsync_counter (name, value) VALUES ('suppression', 0);
CREATE INDEX subsync_status_change_time ON subsync_status_change (changed_at, id)`,
		postgres: `
CREATE TABLE subsync_counter (
    name  TEXT   PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO subsync_counter (name, value) VALUES ('suppression', 0);
CREATE INDEX subsync_status_change_time ON subsync_status_change (changed_at, id)`,
	},
	{
		version: 3,
		name:    "recent fingerprint changes beside the buckets",
		sqlite: `
CREATE TABLE subsync_fingerprint_recent (
    list_id INTEGER NOT NULL,
    email   INTEGER NOT NULL,
    payload INTEGER NOT NULL,
    PRIMARY KEY (list_id, email)
) WITHOUT ROWID`,
		postgres: `
CREATE TABLE subsync_fingerprint_recent (
    list_id BIGINT NOT NULL,
    email   BIGINT NOT NULL,
    payload BIGINT NOT NULL,
    PRIMARY KEY (list_id, email)
)`,
	},
	{
		version: 4,
		name:    "fingerprints carry the hash of the source values (24-byte entries; older ones are dropped)",
		sqlite: `
DELETE FROM subsync_fingerprint;
DELETE FROM subsync_fingerprint_recent;
ALTER TABLE subsync_fingerprint_recent ADD COLUMN source INTEGER NOT NULL DEFAULT 0`,
		postgres: `
DELETE FROM subsync_fingerprint;
DELETE FROM subsync_fingerprint_recent;
ALTER TABLE subsync_fingerprint_recent ADD COLUMN source BIGINT NOT NULL DEFAULT 0`,
	},
	{
		version: 5,
		name:    "the roster of each sync (who it delivered to its list, with their source key), removals counted",
		sqlite: `
CREATE TABLE subsync_roster (
    sync       TEXT    NOT NULL,
    list_id    INTEGER NOT NULL,
    email      TEXT    NOT NULL,
    email_hash INTEGER NOT NULL,
    ext_key    TEXT    NOT NULL DEFAULT '',
    key_hash   INTEGER NOT NULL DEFAULT 0,
    moved      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (sync, list_id, email)
) WITHOUT ROWID;
CREATE INDEX subsync_roster_key ON subsync_roster (sync, list_id, key_hash);
ALTER TABLE subsync_run ADD COLUMN rows_removed INTEGER NOT NULL DEFAULT 0`,
		postgres: `
CREATE TABLE subsync_roster (
    sync       TEXT    NOT NULL,
    list_id    BIGINT  NOT NULL,
    email      TEXT    NOT NULL,
    email_hash BIGINT  NOT NULL,
    ext_key    TEXT    NOT NULL DEFAULT '',
    key_hash   BIGINT  NOT NULL DEFAULT 0,
    moved      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (sync, list_id, email)
);
CREATE INDEX subsync_roster_key ON subsync_roster (sync, list_id, key_hash);
ALTER TABLE subsync_run ADD COLUMN rows_removed BIGINT NOT NULL DEFAULT 0`,
	},
	{
		version: 6,
		name:    "whole rejected rows (the source header once per run, each reject's row) and warnings",
		sqlite: `
ALTER TABLE subsync_run ADD COLUMN source_header TEXT NOT NULL DEFAULT '';
ALTER TABLE subsync_reject ADD COLUMN row_values TEXT NOT NULL DEFAULT '';
CREATE TABLE subsync_warning (
    run_id     INTEGER NOT NULL REFERENCES subsync_run (id) ON DELETE CASCADE,
    ordinal    INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    line       INTEGER NOT NULL,
    sheet      TEXT    NOT NULL DEFAULT '',
    col        TEXT    NOT NULL DEFAULT '',
    value      TEXT    NOT NULL DEFAULT '',
    code       TEXT    NOT NULL,
    reason     TEXT    NOT NULL,
    row_values TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, ordinal, seq)
) WITHOUT ROWID`,
		postgres: `
ALTER TABLE subsync_run ADD COLUMN source_header TEXT NOT NULL DEFAULT '';
ALTER TABLE subsync_reject ADD COLUMN row_values TEXT NOT NULL DEFAULT '';
CREATE TABLE subsync_warning (
    run_id     BIGINT  NOT NULL REFERENCES subsync_run (id) ON DELETE CASCADE,
    ordinal    BIGINT  NOT NULL,
    seq        INTEGER NOT NULL,
    line       INTEGER NOT NULL,
    sheet      TEXT    NOT NULL DEFAULT '',
    col        TEXT    NOT NULL DEFAULT '',
    value      TEXT    NOT NULL DEFAULT '',
    code       TEXT    NOT NULL,
    reason     TEXT    NOT NULL,
    row_values TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, ordinal, seq)
)`,
	},
	{
		version: 7,
		name:    "erasure: the key of the keyed hashes, the erased people's keyed hashes, pending erasure requests",
		sqlite: `
CREATE TABLE subsync_erasure_key (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    secret     BLOB    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE subsync_erased (
    hash      TEXT    PRIMARY KEY,
    erased_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE subsync_erasure_request (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    hash         TEXT    NOT NULL UNIQUE,
    email        TEXT    NOT NULL,
    requested_at INTEGER NOT NULL
)`,
		postgres: `
CREATE TABLE subsync_erasure_key (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    secret     BYTEA  NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE subsync_erased (
    hash      TEXT   PRIMARY KEY,
    erased_at BIGINT NOT NULL
);
CREATE TABLE subsync_erasure_request (
    id           BIGSERIAL PRIMARY KEY,
    hash         TEXT   NOT NULL UNIQUE,
    email        TEXT   NOT NULL,
    requested_at BIGINT NOT NULL
)`,
	},
	{
		version: 8,
		name:    "batches acknowledged above a run's checkpoint: a resumed run does not send them again",
		sqlite: `
CREATE TABLE subsync_run_acked (
    run_id  INTEGER NOT NULL,
    max_ord INTEGER NOT NULL,
    ords    BLOB    NOT NULL,
    PRIMARY KEY (run_id, max_ord)
)`,
		postgres: `
CREATE TABLE subsync_run_acked (
    run_id  BIGINT NOT NULL,
    max_ord BIGINT NOT NULL,
    ords    BYTEA  NOT NULL,
    PRIMARY KEY (run_id, max_ord)
)`,
	},
	{
		version: 9,
		name:    "fingerprint buckets in parts: a large save appends a part to each bucket instead of rewriting it",
		sqlite: `
CREATE TABLE subsync_fingerprint_parts (
    list_id INTEGER NOT NULL,
    bucket  INTEGER NOT NULL,
    part    INTEGER NOT NULL,
    data    BLOB    NOT NULL,
    PRIMARY KEY (list_id, bucket, part)
);
INSERT INTO subsync_fingerprint_parts (list_id, bucket, part, data) SELECT list_id, bucket, 0, data FROM subsync_fingerprint;
DROP TABLE subsync_fingerprint;
ALTER TABLE subsync_fingerprint_parts RENAME TO subsync_fingerprint`,
		postgres: `
ALTER TABLE subsync_fingerprint ADD COLUMN part INTEGER NOT NULL DEFAULT 0;
ALTER TABLE subsync_fingerprint DROP CONSTRAINT subsync_fingerprint_pkey;
ALTER TABLE subsync_fingerprint ADD PRIMARY KEY (list_id, bucket, part)`,
	},
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
