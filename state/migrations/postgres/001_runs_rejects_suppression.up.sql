-- runs, rejects, suppression, status log, fingerprints, staged files, watermarks
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
);
