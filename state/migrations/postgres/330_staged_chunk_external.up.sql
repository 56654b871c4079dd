-- staged chunks are zstd frames already: stored as they are, never compressed again (Postgres: STORAGE EXTERNAL; SQLite compresses nothing)
ALTER TABLE subsync_staged_chunk ALTER COLUMN data SET STORAGE EXTERNAL;
