package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/subsync/subsync/sink"
)

// RecordStatusChanges logs the changes not logged before (unique on e-mail, status, time and
// list), applies each new one to the suppression list (unsubscribed and bounce suppress, active
// lifts an older suppression), and queues a write-back of each new change for every target.
// All of it is one transaction; recording the same changes twice changes nothing the second
// time. It returns how many changes were new.
func (s *Store) RecordStatusChanges(ctx context.Context, changes []StatusChange, writeBackTargets []string) (int, error) {
	return s.recordChanges(ctx, changes, writeBackTargets, false)
}

// RecordReconciled is [Store.RecordStatusChanges] for what a reconciliation found (a list's
// subscribers read with a status of unsubscribed or bounce, whose times are those of the
// subscriber rather than of the change): a change whose e-mail is already suppressed in its
// list with the same status is not news and is left out, so a reconciliation only fills the
// gaps of the status feed and never writes a change back twice.
func (s *Store) RecordReconciled(ctx context.Context, changes []StatusChange, writeBackTargets []string) (int, error) {
	return s.recordChanges(ctx, changes, writeBackTargets, true)
}

func (s *Store) recordChanges(ctx context.Context, changes []StatusChange, writeBackTargets []string, reconciled bool) (int, error) {
	// An erased person's changes (the feed may list them for a while) are not recorded: their
	// address would be back in the change log.
	erased, err := s.loadErased(ctx)
	if err != nil {
		return 0, fmt.Errorf("record status changes: %w", err)
	}
	added := 0
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		added = 0
		changed := false
		for _, c := range changes {
			email := NormaliseEmail(c.Email)
			if erased != nil && erased.has(EmailHash(email)) {
				continue
			}
			if reconciled {
				var st string
				err := tx.QueryRowContext(ctx, "SELECT status FROM subsync_suppression WHERE list_id = $1 AND email = $2",
					c.ListID, email).Scan(&st)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("read suppression: %w", err)
				}
				if err == nil && st == c.Status {
					continue
				}
			}
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
			var ch bool
			switch c.Status {
			case sink.StatusUnsubscribed, sink.StatusBounce:
				ch, err = suppress(ctx, tx, c.ListID, email, c.Status, c.ChangedAt)
			case sink.StatusActive:
				ch, err = unsuppress(ctx, tx, c.ListID, email, c.ChangedAt)
			}
			if err != nil {
				return err
			}
			changed = changed || ch
			for _, target := range writeBackTargets {
				if _, err := tx.ExecContext(ctx, `INSERT INTO subsync_writeback (change_id, target, created_at)
VALUES ($1, $2, `+s.d.nowExpr()+`) ON CONFLICT (change_id, target) DO NOTHING`, id, target); err != nil {
					return fmt.Errorf("queue write-back: %w", err)
				}
			}
		}
		if changed {
			return bumpSuppressionVersion(ctx, tx)
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
