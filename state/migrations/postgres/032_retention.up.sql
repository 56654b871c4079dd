-- retention: when a run's rejects, warnings and removals were deleted by the retention policy, and the finished runs by age
ALTER TABLE subsync_run ADD COLUMN rejects_pruned_at BIGINT NOT NULL DEFAULT 0;
CREATE INDEX subsync_run_finished ON subsync_run (finished_at);
