package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Watermark returns the named watermark (the highest value of a SQL source's watermark
// column a successful incremental sync read), or "" when there is none.
func (s *Store) Watermark(ctx context.Context, name string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, "SELECT value FROM subsync_watermark WHERE name = $1", name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read watermark %q: %w", name, err)
	}
	return v, nil
}

// SetWatermark records the named watermark; "" deletes it (the next sync reads everything).
func (s *Store) SetWatermark(ctx context.Context, name, value string) error {
	var err error
	if value == "" {
		_, err = s.db.ExecContext(ctx, "DELETE FROM subsync_watermark WHERE name = $1", name)
	} else {
		_, err = s.db.ExecContext(ctx, `INSERT INTO subsync_watermark (name, value, updated_at)
VALUES ($1, $2, `+s.d.nowExpr()+`)
ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, name, value)
	}
	if err != nil {
		return fmt.Errorf("set watermark %q: %w", name, err)
	}
	return nil
}
