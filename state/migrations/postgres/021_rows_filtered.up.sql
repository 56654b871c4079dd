-- rows a mapping's where expression left out (filtered), counted per run
ALTER TABLE subsync_run ADD COLUMN rows_filtered INTEGER NOT NULL DEFAULT 0;
