-- erasure: the key of the keyed hashes, the erased people's keyed hashes, pending erasure requests
CREATE TABLE subsync_erasure_key (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    secret     BYTEA  NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE subsync_erased (
    hash      TEXT   PRIMARY KEY,
    erased_at BIGINT NOT NULL
);
CREATE TABLE subsync_erasure_request (
    id           BIGSERIAL PRIMARY KEY,
    hash         TEXT   NOT NULL UNIQUE,
    email        TEXT   NOT NULL,
    requested_at BIGINT NOT NULL
);
