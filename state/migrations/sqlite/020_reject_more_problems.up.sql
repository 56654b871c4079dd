-- every problem of a rejected row: the ones besides the first (col, value, code, reason), as a JSON array
ALTER TABLE subsync_reject ADD COLUMN more_problems TEXT NOT NULL DEFAULT '';
