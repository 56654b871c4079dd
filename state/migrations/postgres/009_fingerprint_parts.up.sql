-- fingerprint buckets in parts: a large save appends a part to each bucket instead of rewriting it
ALTER TABLE subsync_fingerprint ADD COLUMN part INTEGER NOT NULL DEFAULT 0;
ALTER TABLE subsync_fingerprint DROP CONSTRAINT subsync_fingerprint_pkey;
ALTER TABLE subsync_fingerprint ADD PRIMARY KEY (list_id, bucket, part);
