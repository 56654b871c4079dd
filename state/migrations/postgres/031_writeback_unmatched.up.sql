-- write-backs that matched nothing in the source: how often each did, and how many a run left so
ALTER TABLE subsync_writeback ADD COLUMN unmatched INTEGER NOT NULL DEFAULT 0;
ALTER TABLE subsync_run ADD COLUMN rows_unmatched BIGINT NOT NULL DEFAULT 0;
