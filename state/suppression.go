package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Suppression statuses: a person in the suppression list is never made active by a sync.
const (
	StatusUnsubscribed = "unsubscribed"
	StatusBounce       = "bounce"
	StatusActive       = "active"
)

// AllLists is the list id of a suppression that applies to every list.
const AllLists int64 = 0

// Suppression is one entry of the suppression list.
type Suppression struct {
	ListID    int64 // AllLists for every list
	Email     string
	Status    string // StatusUnsubscribed or StatusBounce
	ChangedAt time.Time
}

// StatusChange is one change of a subscriber's status reported by the service.
type StatusChange struct {
	Email        string
	Status       string
	StatusMobile string
	ListID       int64
	SubscriberID int64
	ChangedAt    time.Time
}

// Suppress adds entries to the suppression list (or updates them when newer).
func (s *Store) Suppress(ctx context.Context, entries []Suppression) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, e := range entries {
			if err := suppress(ctx, tx, e.ListID, e.Email, e.Status, e.ChangedAt); err != nil {
				return err
			}
		}
		return nil
	})
}

func suppress(ctx context.Context, tx *sql.Tx, listID int64, email, status string, at time.Time) error {
	if status != StatusUnsubscribed && status != StatusBounce {
		return fmt.Errorf("suppress: status %q is neither %q nor %q", status, StatusUnsubscribed, StatusBounce)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO subsync_suppression (list_id, email, status, changed_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (list_id, email) DO UPDATE SET status = excluded.status, changed_at = excluded.changed_at
WHERE subsync_suppression.changed_at <= excluded.changed_at`, listID, NormaliseEmail(email), status, micros(at))
	if err != nil {
		return fmt.Errorf("suppress: %w", err)
	}
	return nil
}

func unsuppress(ctx context.Context, tx *sql.Tx, listID int64, email string, at time.Time) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM subsync_suppression
WHERE list_id = $1 AND email = $2 AND changed_at <= $3`, listID, NormaliseEmail(email), micros(at))
	if err != nil {
		return fmt.Errorf("unsuppress: %w", err)
	}
	return nil
}

// HasSuppressions reports whether any suppression applies to the list (or to all lists).
func (s *Store) HasSuppressions(ctx context.Context, listID int64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM subsync_suppression
WHERE list_id IN ($1, 0) LIMIT 1) AS t`, listID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check suppressions of list %d: %w", listID, err)
	}
	return n > 0, nil
}

// Suppressed returns, for those of the e-mails that are suppressed in the list (or in all
// lists), their status. Keys are normalised e-mails.
func (s *Store) Suppressed(ctx context.Context, listID int64, emails []string) (map[string]string, error) {
	out := map[string]string{}
	maxArgs := s.d.bulkRows()
	for len(emails) > 0 {
		n := min(len(emails), maxArgs)
		var b strings.Builder
		b.WriteString("SELECT email, status FROM subsync_suppression WHERE list_id IN (")
		s.d.param(&b, 1)
		b.WriteString(", 0) AND email IN (")
		args := make([]any, 0, n+1)
		args = append(args, listID)
		for i, e := range emails[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			s.d.param(&b, i+2)
			args = append(args, NormaliseEmail(e))
		}
		b.WriteByte(')')
		rows, err := s.db.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("read suppressions of list %d: %w", listID, err)
		}
		for rows.Next() {
			var e, st string
			if err := rows.Scan(&e, &st); err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("read suppressions of list %d: %w", listID, err)
			}
			out[e] = st
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read suppressions of list %d: %w", listID, err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read suppressions of list %d: %w", listID, err)
		}
		emails = emails[n:]
	}
	return out, nil
}

// RecordStatusChanges logs the changes not logged before (unique on e-mail, status, time and
// list), applies each new one to the suppression list (unsubscribed and bounce suppress, active
// lifts an older suppression), and queues a write-back of each new change for every target.
// All of it is one transaction; recording the same changes twice changes nothing the second
// time. It returns how many changes were new.
func (s *Store) RecordStatusChanges(ctx context.Context, changes []StatusChange, writeBackTargets []string) (int, error) {
	added := 0
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, c := range changes {
			email := NormaliseEmail(c.Email)
			var id int64
			err := tx.QueryRowContext(ctx, `INSERT INTO subsync_status_change
    (email, status, status_mobile, list_id, subscriber_id, changed_at, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, `+s.d.nowExpr()+`)
ON CONFLICT (email, status, changed_at, list_id) DO NOTHING RETURNING id`,
				email, c.Status, c.StatusMobile, c.ListID, c.SubscriberID, micros(c.ChangedAt)).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("log status change: %w", err)
			}
			added++
			switch c.Status {
			case StatusUnsubscribed, StatusBounce:
				err = suppress(ctx, tx, c.ListID, email, c.Status, c.ChangedAt)
			case StatusActive:
				err = unsuppress(ctx, tx, c.ListID, email, c.ChangedAt)
			}
			if err != nil {
				return err
			}
			for _, target := range writeBackTargets {
				if _, err := tx.ExecContext(ctx, `INSERT INTO subsync_writeback (change_id, target, created_at)
VALUES ($1, $2, `+s.d.nowExpr()+`) ON CONFLICT (change_id, target) DO NOTHING`, id, target); err != nil {
					return fmt.Errorf("queue write-back: %w", err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record status changes: %w", err)
	}
	return added, nil
}

// StatusChanges returns logged changes for an e-mail (all e-mails when empty), oldest first.
func (s *Store) StatusChanges(ctx context.Context, email string, limit int) ([]StatusChange, error) {
	q := `SELECT email, status, status_mobile, list_id, subscriber_id, changed_at FROM subsync_status_change`
	args := []any{}
	if email != "" {
		q += " WHERE email = $1"
		args = append(args, NormaliseEmail(email))
	}
	if limit <= 0 {
		limit = 1000
	}
	args = append(args, limit)
	q += fmt.Sprintf(" ORDER BY changed_at, id LIMIT $%d", len(args))
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read status changes: %w", err)
	}
	defer rows.Close()
	var out []StatusChange
	for rows.Next() {
		var c StatusChange
		var at int64
		if err := rows.Scan(&c.Email, &c.Status, &c.StatusMobile, &c.ListID, &c.SubscriberID, &at); err != nil {
			return nil, fmt.Errorf("read status changes: %w", err)
		}
		c.ChangedAt = fromMicros(at)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read status changes: %w", err)
	}
	return out, nil
}

// StatusCursor returns the named cursor (the time up to which status changes were pulled),
// or the zero time when it was never set.
func (s *Store) StatusCursor(ctx context.Context, name string) (time.Time, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, "SELECT position FROM subsync_status_cursor WHERE name = $1", name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read status cursor %q: %w", name, err)
	}
	return fromMicros(v), nil
}

// AdvanceStatusCursor moves the named cursor to t; it never moves backwards.
func (s *Store) AdvanceStatusCursor(ctx context.Context, name string, t time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO subsync_status_cursor (name, position, updated_at)
VALUES ($1, $2, `+s.d.nowExpr()+`)
ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at
WHERE subsync_status_cursor.position < excluded.position`, name, micros(t))
	if err != nil {
		return fmt.Errorf("advance status cursor %q: %w", name, err)
	}
	return nil
}

// WriteBack is a status change still to be written back to a target (a source).
type WriteBack struct {
	ID        int64
	Target    string
	Change    StatusChange
	Attempts  int
	LastError string
}

// PendingWriteBacks returns up to limit pending write-backs for target, oldest first.
func (s *Store) PendingWriteBacks(ctx context.Context, target string, limit int) ([]WriteBack, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.db.QueryContext(ctx, `SELECT w.id, w.target, w.attempts, w.last_error,
    c.email, c.status, c.status_mobile, c.list_id, c.subscriber_id, c.changed_at
FROM subsync_writeback w JOIN subsync_status_change c ON c.id = w.change_id
WHERE w.target = $1 AND w.state = 'pending' ORDER BY w.id LIMIT $2`, target, limit)
	if err != nil {
		return nil, fmt.Errorf("read write-backs for %q: %w", target, err)
	}
	defer rows.Close()
	var out []WriteBack
	for rows.Next() {
		var w WriteBack
		var at int64
		if err := rows.Scan(&w.ID, &w.Target, &w.Attempts, &w.LastError, &w.Change.Email, &w.Change.Status,
			&w.Change.StatusMobile, &w.Change.ListID, &w.Change.SubscriberID, &at); err != nil {
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
	var err error
	if writeErr == nil {
		_, err = s.db.ExecContext(ctx, `UPDATE subsync_writeback SET state = 'done', attempts = attempts + 1,
    last_error = '', done_at = `+s.d.nowExpr()+` WHERE id = $1`, id)
	} else {
		_, err = s.db.ExecContext(ctx, `UPDATE subsync_writeback SET attempts = attempts + 1, last_error = $2
WHERE id = $1`, id, writeErr.Error())
	}
	if err != nil {
		return fmt.Errorf("complete write-back %d: %w", id, err)
	}
	return nil
}
