-- what a run's page tells besides its counts: the people a sync unsubscribed (who left its source, and the old addresses of keys that moved, with the new one), and the source columns it did not send
CREATE TABLE subsync_removal (
    id        BIGSERIAL PRIMARY KEY,
    run_id    BIGINT  NOT NULL REFERENCES subsync_run (id) ON DELETE CASCADE,
    email     TEXT    NOT NULL,
    moved     INTEGER NOT NULL DEFAULT 0,
    new_email TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX subsync_removal_run ON subsync_removal (run_id, id);
CREATE INDEX subsync_removal_email ON subsync_removal (email);
ALTER TABLE subsync_run ADD COLUMN unplaced_columns TEXT NOT NULL DEFAULT '';
ALTER TABLE subsync_run ADD COLUMN ignored_columns TEXT NOT NULL DEFAULT '';
