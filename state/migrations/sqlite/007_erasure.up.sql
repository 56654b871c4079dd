-- erasure: the key of the keyed hashes, the erased people's keyed hashes, pending erasure requests
CREATE TABLE subsync_erasure_key (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    secret     BLOB    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE subsync_erased (
    hash      TEXT    PRIMARY KEY,
    erased_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE subsync_erasure_request (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    hash         TEXT    NOT NULL UNIQUE,
    email        TEXT    NOT NULL,
    requested_at INTEGER NOT NULL
);
