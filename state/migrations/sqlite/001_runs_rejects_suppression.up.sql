-- runs, rejects, suppression, status log, fingerprints, staged files, watermarks
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
);
