-- the roster of each sync (who it delivered to its list, with their source key), removals counted
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
ALTER TABLE subsync_run ADD COLUMN rows_removed BIGINT NOT NULL DEFAULT 0;
