-- counters (the suppression list's version), status changes by time
CREATE TABLE subsync_counter (
    name  TEXT   PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO subsync_counter (name, value) VALUES ('suppression', 0);
CREATE INDEX subsync_status_change_time ON subsync_status_change (changed_at, id);
