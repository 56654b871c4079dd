-- the HTTP API's Idempotency-Key: the first answer to a POST with a key, per token, replayed for the same key within a day (status 0 = the first request is under way; times in Unix microseconds)
CREATE TABLE subsync_api_idempotency (
    token        TEXT    NOT NULL,
    idem_key     TEXT    NOT NULL,
    request      TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    status       INTEGER NOT NULL DEFAULT 0,
    location     TEXT    NOT NULL DEFAULT '',
    content_type TEXT    NOT NULL DEFAULT '',
    body         BLOB,
    PRIMARY KEY (token, idem_key)
) WITHOUT ROWID;
CREATE INDEX subsync_api_idempotency_created ON subsync_api_idempotency (created_at);
