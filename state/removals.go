package state

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Removed is one person a sync unsubscribed, as its run's page and `runs ID --removed` list
// them: an address that left the source, or the old address of a key that came with a new
// one (Moved, with NewEmail).
type Removed struct {
	ID       int64 // orders a run's removals; the cursor of a page of them
	Email    string
	Moved    bool
	NewEmail string // the key's address now, for a moved one ("" when the roster no longer has it)
}

// RemovalCounts are how many people a run unsubscribed, by why.
type RemovalCounts struct {
	Left  int64 // people who left the source
	Moved int64 // old addresses of keys that came with a new one
}

// recordRemoved writes the addresses a stretch of removals unsubscribed into the run's list
// of removals, each with why, from the roster before they leave it: a member marked moved is
// the old address of a key, whose new address is the member with the same key not moved.
func recordRemoved(ctx context.Context, tx *sql.Tx, d Dialect, r Removal) error {
	emails := r.Removed
	maxRows := d.bulkRows()
	for len(emails) > 0 {
		n := min(len(emails), maxRows)
		args := []any{r.RunID, r.Sync, r.ListID}
		var b strings.Builder
		b.WriteString(`INSERT INTO subsync_removal (run_id, email, moved, new_email)
SELECT $1, o.email, o.moved, COALESCE((SELECT MIN(n.email) FROM subsync_roster n
    WHERE n.sync = o.sync AND n.list_id = o.list_id AND o.moved <> 0 AND n.key_hash = o.key_hash AND n.moved = 0), '')
FROM subsync_roster o WHERE o.sync = $2 AND o.list_id = $3 AND o.email IN (`)
		for i, e := range emails[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			d.param(&b, 4+i)
			args = append(args, NormaliseEmail(e))
		}
		b.WriteString(") ORDER BY o.moved DESC, o.email")
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("record whom run %d unsubscribed: %w", r.RunID, err)
		}
		emails = emails[n:]
	}
	return nil
}

// RemovedPage returns up to limit of the people a run unsubscribed, after the one with id
// after, in the order they were unsubscribed.
func (s *Store) RemovedPage(ctx context.Context, runID, after int64, limit int) ([]Removed, error) {
	var out []Removed
	err := s.ScanRemoved(ctx, runID, after, limit, func(r Removed) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// ScanRemoved streams to fn the people a run unsubscribed after the one with id after, up
// to limit of them (0: all), in the order they were unsubscribed.
func (s *Store) ScanRemoved(ctx context.Context, runID, after int64, limit int, fn func(Removed) error) error {
	q := `SELECT id, email, moved, new_email FROM subsync_removal WHERE run_id = $1 AND id > $2 ORDER BY id`
	args := []any{runID, after}
	if limit > 0 {
		q += " LIMIT $3"
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read whom run %d unsubscribed: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Removed
		var moved int
		if err := rows.Scan(&r.ID, &r.Email, &moved, &r.NewEmail); err != nil {
			return fmt.Errorf("read whom run %d unsubscribed: %w", runID, err)
		}
		r.Moved = moved != 0
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read whom run %d unsubscribed: %w", runID, err)
	}
	return nil
}

// CountRemoved counts the people a run unsubscribed, by why.
func (s *Store) CountRemoved(ctx context.Context, runID int64) (RemovalCounts, error) {
	var c RemovalCounts
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(CASE WHEN moved = 0 THEN 1 ELSE 0 END), 0),
    COALESCE(SUM(moved), 0) FROM subsync_removal WHERE run_id = $1`, runID).Scan(&c.Left, &c.Moved)
	if err != nil {
		return c, fmt.Errorf("count whom run %d unsubscribed: %w", runID, err)
	}
	return c, nil
}

// eraseRemoved deletes a person from the lists of removals, as the address that left or moved
// and as a new address.
func eraseRemoved(ctx context.Context, _ *Store, tx *sql.Tx, email string) (int64, error) {
	return execCount(ctx, tx, "DELETE FROM subsync_removal WHERE email = $1 OR new_email = $1", email)
}

// SetColumnsNotSent records, once per attempt, the source columns a run does not send: those
// neither mapped nor ignored (unplaced) and those the mapping ignores. The caller holds the
// lease.
func (s *Store) SetColumnsNotSent(ctx context.Context, runID int64, owner string, unplaced, ignored []string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_run SET unplaced_columns = $3, ignored_columns = $4
WHERE id = $1 AND lease_owner = $2`, runID, owner, EncodeRow(unplaced), EncodeRow(ignored))
	if err != nil {
		return fmt.Errorf("record the columns run %d does not send: %w", runID, err)
	}
	return fenced(res, runID)
}

// ColumnsNotSent returns the source columns a run did not send (see SetColumnsNotSent).
func (s *Store) ColumnsNotSent(ctx context.Context, runID int64) (unplaced, ignored []string, err error) {
	var u, i string
	if err := s.db.QueryRowContext(ctx, `SELECT unplaced_columns, ignored_columns FROM subsync_run WHERE id = $1`, runID).
		Scan(&u, &i); err != nil {
		return nil, nil, fmt.Errorf("read the columns run %d did not send: %w", runID, err)
	}
	if unplaced, err = decodeColumns(u); err != nil {
		return nil, nil, fmt.Errorf("read the columns run %d did not send: %w", runID, err)
	}
	if ignored, err = decodeColumns(i); err != nil {
		return nil, nil, fmt.Errorf("read the columns run %d did not send: %w", runID, err)
	}
	return unplaced, ignored, nil
}

func decodeColumns(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	return DecodeRow(s)
}
