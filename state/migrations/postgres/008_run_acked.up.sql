-- batches acknowledged above a run's checkpoint: a resumed run does not send them again
CREATE TABLE subsync_run_acked (
    run_id  BIGINT NOT NULL,
    max_ord BIGINT NOT NULL,
    ords    BYTEA  NOT NULL,
    PRIMARY KEY (run_id, max_ord)
);
