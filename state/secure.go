package state

import (
	"context"
	"fmt"
)

// EmptyLog empties SQLite's write-ahead log into the database file and truncates it (PRAGMA
// wal_checkpoint(TRUNCATE)), so the log keeps no older copy of a page: after an erasure, the
// pages that held the address are gone from the log as from the file (secure_delete zeroed
// them there). It waits for readers up to the busy timeout; ok is false when one still held
// the log (its copies then go at a later checkpoint). On Postgres it does nothing.
func (s *Store) EmptyLog(ctx context.Context) (ok bool, err error) {
	if s.d != SQLite {
		return true, nil
	}
	var busy, logged, done int
	if err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logged, &done); err != nil {
		return false, fmt.Errorf("empty the write-ahead log: %w", err)
	}
	return busy == 0, nil
}
