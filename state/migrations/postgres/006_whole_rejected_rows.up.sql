-- whole rejected rows (the source header once per run, each reject's row) and warnings
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
);
