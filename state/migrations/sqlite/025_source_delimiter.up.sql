-- the field delimiter of a run's source (a CSV file's), for its rejects export
ALTER TABLE subsync_run ADD COLUMN source_delimiter TEXT NOT NULL DEFAULT '';
