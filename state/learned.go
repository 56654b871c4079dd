package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ListLearned reports when the unsubscribed and bounced people of a list were first read
// from the service into the suppression list (see MarkListLearned); ok is false for a list
// never read so.
func (s *Store) ListLearned(ctx context.Context, listID int64) (at time.Time, ok bool, err error) {
	var v int64
	err = s.db.QueryRowContext(ctx, "SELECT learned_at FROM subsync_list_learned WHERE list_id = $1", listID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read whether list %d was learnt: %w", listID, err)
	}
	return fromMicros(v), true, nil
}

// MarkListLearned records that the unsubscribed and bounced people of a list were read from
// the service into the suppression list at `at` (found of them): a run into the list need
// not read them again before its first push. The first record stays.
func (s *Store) MarkListLearned(ctx context.Context, listID int64, at time.Time, found int) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO subsync_list_learned (list_id, learned_at, found) VALUES ($1, $2, $3)
ON CONFLICT (list_id) DO NOTHING`, listID, micros(at), found)
	if err != nil {
		return fmt.Errorf("record list %d as learnt: %w", listID, err)
	}
	return nil
}

// LearnedLists returns every list whose suppressions were learnt, in id order: the lists a
// reconciliation reads again.
func (s *Store) LearnedLists(ctx context.Context) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT list_id FROM subsync_list_learned ORDER BY list_id")
	if err != nil {
		return nil, fmt.Errorf("read learnt lists: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read learnt lists: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read learnt lists: %w", err)
	}
	return out, nil
}

// AccountSetting returns what subsync learnt of the account under name (see
// SetAccountSetting), and when; ok is false when nothing was.
func (s *Store) AccountSetting(ctx context.Context, name string) (value string, at time.Time, ok bool, err error) {
	var v int64
	err = s.db.QueryRowContext(ctx, "SELECT value, updated_at FROM subsync_account_setting WHERE name = $1", name).Scan(&value, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, false, nil
	}
	if err != nil {
		return "", time.Time{}, false, fmt.Errorf("read account setting %q: %w", name, err)
	}
	return value, fromMicros(v), true, nil
}

// SetAccountSetting records what subsync learnt of the account (the form of the list
// parameter the service takes, say), so that every worker and every later run uses it.
func (s *Store) SetAccountSetting(ctx context.Context, name, value string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO subsync_account_setting (name, value, updated_at)
VALUES ($1, $2, `+s.d.nowExpr()+`)
ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, name, value)
	if err != nil {
		return fmt.Errorf("record account setting %q: %w", name, err)
	}
	return nil
}
