-- a file uploaded on the import page waits for its import as a staged file until upload_expires (Unix microseconds; 0 = not an upload waiting: staged for a job)
ALTER TABLE subsync_staged_file ADD COLUMN upload_expires BIGINT NOT NULL DEFAULT 0;
