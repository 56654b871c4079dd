-- the workers of the database: each long-lived worker renews its row while it works jobs, so a command waiting for a run knows whether one is alive
CREATE TABLE subsync_worker (
    id          TEXT    PRIMARY KEY,
    started_at  INTEGER NOT NULL,
    seen_at     INTEGER NOT NULL,
    alive_until INTEGER NOT NULL
) WITHOUT ROWID;
