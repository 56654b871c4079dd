-- staged chunks are zstd frames already: stored as they are, never compressed again (Postgres: STORAGE EXTERNAL; SQLite compresses nothing)
SELECT 1;
