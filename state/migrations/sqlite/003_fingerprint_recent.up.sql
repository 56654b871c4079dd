-- recent fingerprint changes beside the buckets
CREATE TABLE subsync_fingerprint_recent (
    list_id INTEGER NOT NULL,
    email   INTEGER NOT NULL,
    payload INTEGER NOT NULL,
    PRIMARY KEY (list_id, email)
) WITHOUT ROWID;
