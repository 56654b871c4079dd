package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// A write-back of a change to a target (a source) is pending until it is written: then done
// when it applied to the source, or unmatched when the source holds nothing for the person
// (an UPDATE that matched no row). An unmatched change is tried again by later writes, up to
// a number of tries the caller sets, unless a later change of the same person was queued
// for the target meanwhile: the later change is the one that counts.

// Write-back states.
const (
	WriteBackPending   = "pending"
	WriteBackDone      = "done"
	WriteBackUnmatched = "unmatched"
)

// WriteBack is a status change to be written back to a target (a source).
type WriteBack struct {
	ID        int64
	Target    string
	Change    StatusChange
	State     string // WriteBackPending, WriteBackDone or WriteBackUnmatched
	Attempts  int    // writes tried, failed ones included
	Unmatched int    // writes that matched nothing in the source
	LastError string
}

const writeBackColumns = `w.id, w.target, w.state, w.attempts, w.unmatched, w.last_error,
    c.email, c.status, c.status_mobile, c.list_id, c.subscriber_id, c.changed_at`

// PendingWriteBacks returns up to limit pending write-backs for target, in the order the
// changes happened (oldest first), so that a later change of the same person is applied last.
func (s *Store) PendingWriteBacks(ctx context.Context, target string, limit int) ([]WriteBack, error) {
	return s.writeBacks(ctx, target, `w.state = 'pending'`, limit)
}

// UnmatchedWriteBacks returns up to limit write-backs for target that matched nothing in the
// source, oldest change first.
func (s *Store) UnmatchedWriteBacks(ctx context.Context, target string, limit int) ([]WriteBack, error) {
	return s.writeBacks(ctx, target, `w.state = 'unmatched'`, limit)
}

// DueWriteBacks returns up to limit write-backs for target to write now, oldest change
// first: the pending ones, and the unmatched ones tried fewer than tries times that no later
// change of the same person supersedes.
func (s *Store) DueWriteBacks(ctx context.Context, target string, limit, tries int) ([]WriteBack, error) {
	return s.writeBacks(ctx, target, `(w.state = 'pending' OR w.state = 'unmatched' AND w.unmatched < `+fmt.Sprint(tries)+`
    AND NOT EXISTS (SELECT 1 FROM subsync_writeback w2 JOIN subsync_status_change c2 ON c2.id = w2.change_id
        WHERE w2.target = w.target AND c2.email = c.email AND (c2.changed_at > c.changed_at
            OR c2.changed_at = c.changed_at AND w2.id > w.id)))`, limit)
}

func (s *Store) writeBacks(ctx context.Context, target, cond string, limit int) ([]WriteBack, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+writeBackColumns+`
FROM subsync_writeback w JOIN subsync_status_change c ON c.id = w.change_id
WHERE w.target = $1 AND `+cond+` ORDER BY c.changed_at, w.id LIMIT $2`, target, limit)
	if err != nil {
		return nil, fmt.Errorf("read write-backs for %q: %w", target, err)
	}
	defer rows.Close()
	var out []WriteBack
	for rows.Next() {
		var w WriteBack
		var at int64
		if err := rows.Scan(&w.ID, &w.Target, &w.State, &w.Attempts, &w.Unmatched, &w.LastError, &w.Change.Email,
			&w.Change.Status, &w.Change.StatusMobile, &w.Change.ListID, &w.Change.SubscriberID, &at); err != nil {
			return nil, fmt.Errorf("read write-backs for %q: %w", target, err)
		}
		w.Change.ChangedAt = fromMicros(at)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read write-backs for %q: %w", target, err)
	}
	return out, nil
}

// CompleteWriteBack marks a write-back done (writeErr nil) or records a failed attempt.
func (s *Store) CompleteWriteBack(ctx context.Context, id int64, writeErr error) error {
	return s.CompleteWriteBacks(ctx, []int64{id}, writeErr)
}

// CompleteWriteBacks marks write-backs done (writeErr nil), or records a failed attempt of
// each, with the error's message, leaving them pending; one transaction.
func (s *Store) CompleteWriteBacks(ctx context.Context, ids []int64, writeErr error) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		q := `UPDATE subsync_writeback SET state = 'done', attempts = attempts + 1, last_error = '',
    done_at = ` + s.d.nowExpr() + ` WHERE id = $1`
		var msg string
		if writeErr != nil {
			q = `UPDATE subsync_writeback SET attempts = attempts + 1, last_error = $2 WHERE id = $1 AND state <> 'done'`
			msg = writeErr.Error()
		}
		stmt, err := tx.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, id := range ids {
			args := []any{id}
			if writeErr != nil {
				args = append(args, msg)
			}
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("complete %d write-backs: %w", len(ids), err)
	}
	return nil
}

// MarkWriteBacks records the outcome of a write that committed: done applied to the source,
// unmatched matched nothing there (each such write-back counts one more unmatched try); one
// transaction.
func (s *Store) MarkWriteBacks(ctx context.Context, done, unmatched []int64) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, q := range []struct {
			ids  []int64
			stmt string
		}{
			{done, `UPDATE subsync_writeback SET state = 'done', attempts = attempts + 1, last_error = '',
    done_at = ` + s.d.nowExpr() + ` WHERE id = $1`},
			{unmatched, `UPDATE subsync_writeback SET state = 'unmatched', attempts = attempts + 1,
    unmatched = unmatched + 1, last_error = '' WHERE id = $1 AND state <> 'done'`},
		} {
			if len(q.ids) == 0 {
				continue
			}
			stmt, err := tx.PrepareContext(ctx, q.stmt)
			if err != nil {
				return err
			}
			for _, id := range q.ids {
				if _, err := stmt.ExecContext(ctx, id); err != nil {
					_ = stmt.Close()
					return err
				}
			}
			if err := stmt.Close(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record %d write-backs: %w", len(done)+len(unmatched), err)
	}
	return nil
}

// WriteBackSummary is where the write-backs to one target stand.
type WriteBackSummary struct {
	Target  string
	Pending int64 // changes not yet written back
	Failing int64 // pending ones that failed at least once
	Done    int64
	// Unmatched are the changes the source held nothing for (see DueWriteBacks for their
	// retries).
	Unmatched int64
	// OldestPending is when the oldest pending change happened (zero when none is pending).
	OldestPending time.Time
	// LastError is the error of the latest failed attempt of a pending write-back.
	LastError string
}

// WriteBackSummaries summarises the write-backs of every target that ever had one.
func (s *Store) WriteBackSummaries(ctx context.Context) ([]WriteBackSummary, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT w.target,
    SUM(CASE WHEN w.state = 'pending' THEN 1 ELSE 0 END),
    SUM(CASE WHEN w.state = 'pending' AND w.attempts > 0 THEN 1 ELSE 0 END),
    SUM(CASE WHEN w.state = 'done' THEN 1 ELSE 0 END),
    SUM(CASE WHEN w.state = 'unmatched' THEN 1 ELSE 0 END),
    COALESCE(MIN(CASE WHEN w.state = 'pending' THEN c.changed_at END), 0)
FROM subsync_writeback w JOIN subsync_status_change c ON c.id = w.change_id
GROUP BY w.target ORDER BY w.target`)
	if err != nil {
		return nil, fmt.Errorf("summarise write-backs: %w", err)
	}
	var out []WriteBackSummary
	for rows.Next() {
		var w WriteBackSummary
		var oldest int64
		if err := rows.Scan(&w.Target, &w.Pending, &w.Failing, &w.Done, &w.Unmatched, &oldest); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("summarise write-backs: %w", err)
		}
		w.OldestPending = fromMicros(oldest)
		out = append(out, w)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("summarise write-backs: %w", err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("summarise write-backs: %w", err)
	}
	for i := range out {
		if out[i].Failing == 0 {
			continue
		}
		err := s.db.QueryRowContext(ctx, `SELECT last_error FROM subsync_writeback
WHERE target = $1 AND state = 'pending' AND attempts > 0 ORDER BY id DESC LIMIT 1`, out[i].Target).Scan(&out[i].LastError)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("summarise write-backs: %w", err)
		}
	}
	return out, nil
}
