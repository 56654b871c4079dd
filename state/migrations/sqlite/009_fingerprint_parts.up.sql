-- fingerprint buckets in parts: a large save appends a part to each bucket instead of rewriting it
CREATE TABLE subsync_fingerprint_parts (
    list_id INTEGER NOT NULL,
    bucket  INTEGER NOT NULL,
    part    INTEGER NOT NULL,
    data    BLOB    NOT NULL,
    PRIMARY KEY (list_id, bucket, part)
);
INSERT INTO subsync_fingerprint_parts (list_id, bucket, part, data) SELECT list_id, bucket, 0, data FROM subsync_fingerprint;
DROP TABLE subsync_fingerprint;
ALTER TABLE subsync_fingerprint_parts RENAME TO subsync_fingerprint;
