package state

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Retention: what subsync records about people is kept for a bounded time. A run's rejects,
// warnings and removals (whole source rows and addresses: personal data) go first; the run
// itself (its counts) later; the status change log (with its write-backs, unless one is still
// pending) on its own clock. Two things are never pruned: the suppression list, which keeps
// people who left from being made active again, and the keyed hashes of erased people
// (subsync_erased), which keep them erased.

// PrunePolicy is how long each kind of record is kept; zero or less keeps it for ever.
type PrunePolicy struct {
	// Rejects: the rejects, warnings and removals of runs that finished longer ago.
	Rejects time.Duration
	// Runs: whole runs that finished longer ago (with all they hold).
	Runs time.Duration
	// StatusLog: status changes that happened longer ago, with their write-backs, unless a
	// write-back of theirs is still pending.
	StatusLog time.Duration
}

// PrunedRun is a run that pruning touches.
type PrunedRun struct {
	ID         int64
	Kind, Name string
	FinishedAt time.Time
	// Rejects, Warnings and Removals are the rows of each that go.
	Rejects, Warnings, Removals int64
	// Whole: the run itself goes (it finished before the runs cutoff).
	Whole bool
}

// Pruned is what a prune deleted, or would delete in a dry run.
type Pruned struct {
	// RejectsBefore, RunsBefore and StatusLogBefore are the cutoffs; zero when kept for ever.
	RejectsBefore, RunsBefore, StatusLogBefore time.Time
	// Runs are the runs whose rejects, warnings or removals go, or which go whole, oldest first.
	Runs []PrunedRun
	// Totals over Runs, and the status changes (with their write-backs) that go.
	Rejects, Warnings, Removals, WholeRuns int64
	StatusChanges, WriteBacks              int64
}

// pruneBatch is how many runs one transaction of a prune deletes from.
const pruneBatch = 500

// Prune deletes what the policy no longer keeps, as of now; with dryRun it only says what
// would go. Only final runs are touched.
func (s *Store) Prune(ctx context.Context, p PrunePolicy, now time.Time, dryRun bool) (Pruned, error) {
	var out Pruned
	cutoff := func(keep time.Duration) time.Time {
		if keep <= 0 {
			return time.Time{}
		}
		return now.Add(-keep).UTC()
	}
	out.RejectsBefore, out.RunsBefore, out.StatusLogBefore = cutoff(p.Rejects), cutoff(p.Runs), cutoff(p.StatusLog)
	runs, err := s.pruneCandidates(ctx, out.RejectsBefore, out.RunsBefore)
	if err != nil {
		return out, err
	}
	out.Runs = runs
	for _, r := range runs {
		out.Rejects += r.Rejects
		out.Warnings += r.Warnings
		out.Removals += r.Removals
		if r.Whole {
			out.WholeRuns++
		}
	}
	if !out.StatusLogBefore.IsZero() {
		before := micros(out.StatusLogBefore)
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM subsync_status_change WHERE `+prunableChange,
			before).Scan(&out.StatusChanges); err != nil {
			return out, fmt.Errorf("count the status changes to prune: %w", err)
		}
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM subsync_writeback WHERE change_id IN (
    SELECT id FROM subsync_status_change WHERE `+prunableChange+`)`, before).Scan(&out.WriteBacks); err != nil {
			return out, fmt.Errorf("count the write-backs to prune: %w", err)
		}
	}
	if dryRun {
		return out, nil
	}
	for i := 0; i < len(runs); i += pruneBatch {
		if err := s.pruneRuns(ctx, runs[i:min(i+pruneBatch, len(runs))], now); err != nil {
			return out, err
		}
	}
	if !out.StatusLogBefore.IsZero() {
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `DELETE FROM subsync_writeback WHERE change_id IN (
    SELECT id FROM subsync_status_change WHERE `+prunableChange+`)`, micros(out.StatusLogBefore)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM subsync_status_change WHERE `+prunableChange, micros(out.StatusLogBefore))
			return err
		})
		if err != nil {
			return out, fmt.Errorf("prune the status change log: %w", err)
		}
	}
	return out, nil
}

// prunableChange selects the status changes older than $1 none of whose write-backs is pending.
const prunableChange = `changed_at < $1 AND NOT EXISTS (SELECT 1 FROM subsync_writeback
    WHERE subsync_writeback.change_id = subsync_status_change.id AND subsync_writeback.state = 'pending')`

// pruneCandidates lists the final runs that finished before the rejects cutoff and still have
// rejects, warnings or removals, and those that finished before the runs cutoff.
func (s *Store) pruneCandidates(ctx context.Context, rejectsBefore, runsBefore time.Time) ([]PrunedRun, error) {
	latest := rejectsBefore
	if runsBefore.After(latest) {
		latest = runsBefore
	}
	if latest.IsZero() {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, kind, name, finished_at,
    (SELECT COUNT(*) FROM subsync_reject WHERE subsync_reject.run_id = subsync_run.id),
    (SELECT COUNT(*) FROM subsync_warning WHERE subsync_warning.run_id = subsync_run.id),
    (SELECT COUNT(*) FROM subsync_removal WHERE subsync_removal.run_id = subsync_run.id)
FROM subsync_run
WHERE state IN ('completed', 'failed', 'cancelled') AND finished_at > 0 AND finished_at < $1
ORDER BY finished_at, id`, micros(latest))
	if err != nil {
		return nil, fmt.Errorf("find the runs to prune: %w", err)
	}
	defer rows.Close()
	var out []PrunedRun
	for rows.Next() {
		var r PrunedRun
		var finished int64
		if err := rows.Scan(&r.ID, &r.Kind, &r.Name, &finished, &r.Rejects, &r.Warnings, &r.Removals); err != nil {
			return nil, fmt.Errorf("find the runs to prune: %w", err)
		}
		r.FinishedAt = fromMicros(finished)
		r.Whole = !runsBefore.IsZero() && r.FinishedAt.Before(runsBefore)
		if !r.Whole && (rejectsBefore.IsZero() || !r.FinishedAt.Before(rejectsBefore) || r.Rejects+r.Warnings+r.Removals == 0) {
			continue
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find the runs to prune: %w", err)
	}
	return out, nil
}

// pruneRuns deletes, in one transaction, the rejects, warnings and removals of runs, and the
// runs that go whole; a run that keeps its counts records when its rejects went.
func (s *Store) pruneRuns(ctx context.Context, runs []PrunedRun, now time.Time) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, r := range runs {
			for _, q := range []string{
				`DELETE FROM subsync_reject WHERE run_id = $1`,
				`DELETE FROM subsync_warning WHERE run_id = $1`,
				`DELETE FROM subsync_removal WHERE run_id = $1`,
			} {
				if _, err := tx.ExecContext(ctx, q, r.ID); err != nil {
					return err
				}
			}
			var err error
			if r.Whole {
				if _, err = tx.ExecContext(ctx, `DELETE FROM subsync_run_acked WHERE run_id = $1`, r.ID); err == nil {
					_, err = tx.ExecContext(ctx, `DELETE FROM subsync_run WHERE id = $1`, r.ID)
				}
			} else {
				_, err = tx.ExecContext(ctx, `UPDATE subsync_run SET rejects_pruned_at = $2 WHERE id = $1`, r.ID, micros(now))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("prune %d runs: %w", len(runs), err)
	}
	return nil
}
