-- staged files in blocks: each chunk a zstd frame of its own holding block_size bytes of the file (codec 'gzip', block_size 0: one gzip stream cut into chunks)
ALTER TABLE subsync_staged_file ADD COLUMN block_size INTEGER NOT NULL DEFAULT 0;
ALTER TABLE subsync_staged_file ADD COLUMN codec TEXT NOT NULL DEFAULT 'gzip';
