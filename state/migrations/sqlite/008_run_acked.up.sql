-- batches acknowledged above a run's checkpoint: a resumed run does not send them again
CREATE TABLE subsync_run_acked (
    run_id  INTEGER NOT NULL,
    max_ord INTEGER NOT NULL,
    ords    BLOB    NOT NULL,
    PRIMARY KEY (run_id, max_ord)
);
