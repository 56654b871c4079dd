-- the HTTP API's tokens: a name, the SHA-256 of the token (never the token), read-only or not, when made, last used and revoked (Unix microseconds; 0 = never)
CREATE TABLE subsync_api_token (
    name         TEXT    PRIMARY KEY,
    token_hash   TEXT    NOT NULL UNIQUE,
    read_only    INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL DEFAULT 0,
    revoked_at   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
