-- recent fingerprint changes beside the buckets
CREATE TABLE subsync_fingerprint_recent (
    list_id BIGINT NOT NULL,
    email   BIGINT NOT NULL,
    payload BIGINT NOT NULL,
    PRIMARY KEY (list_id, email)
);
