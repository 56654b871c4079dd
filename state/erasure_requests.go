package state

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// ErasureRequest is an address waiting to be erased. The address is kept only until its
// erasure completes ([Store.CompleteErasure]): a job's arguments never carry it.
type ErasureRequest struct {
	ID    int64
	Hash  string // the keyed hash
	Email string
}

// RequestErasure records addresses to erase (an address already waiting is kept once) and
// returns their keyed hashes, in order.
func (s *Store) RequestErasure(ctx context.Context, emails []string) ([]string, error) {
	h, err := s.hasher(ctx)
	if err != nil {
		return nil, err
	}
	hashes := make([]string, len(emails))
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		for i, e := range emails {
			hashes[i] = h.sum(e)
			if _, err := tx.ExecContext(ctx, `INSERT INTO subsync_erasure_request (hash, email, requested_at)
VALUES ($1, $2, `+s.d.nowExpr()+`) ON CONFLICT (hash) DO NOTHING`, hashes[i], NormaliseEmail(e)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record %d erasure requests: %w", len(emails), err)
	}
	return hashes, nil
}

// ErasureRequests returns the erasures waiting, oldest first.
func (s *Store) ErasureRequests(ctx context.Context) ([]ErasureRequest, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, hash, email FROM subsync_erasure_request ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("read erasure requests: %w", err)
	}
	defer rows.Close()
	var out []ErasureRequest
	for rows.Next() {
		var r ErasureRequest
		if err := rows.Scan(&r.ID, &r.Hash, &r.Email); err != nil {
			return nil, fmt.Errorf("read erasure requests: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read erasure requests: %w", err)
	}
	return out, nil
}

// ErasurePending reports how many of the keyed hashes still wait for their erasure.
func (s *Store) ErasurePending(ctx context.Context, hashes []string) (int, error) {
	n := 0
	for _, h := range hashes {
		var c int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_erasure_request WHERE hash = $1", h).Scan(&c); err != nil {
			return 0, fmt.Errorf("read erasure requests: %w", err)
		}
		n += c
	}
	return n, nil
}

// CompleteErasure deletes a request once the person is erased everywhere.
func (s *Store) CompleteErasure(ctx context.Context, id int64) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM subsync_erasure_request WHERE id = $1", id); err != nil {
		return fmt.Errorf("complete erasure request %d: %w", id, err)
	}
	return nil
}

// RunsInFlightSince counts the imports and syncs that began before t and are running now
// (their lease alive).
func (s *Store) RunsInFlightSince(ctx context.Context, t time.Time) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM subsync_run
WHERE kind IN ($1, $2) AND state = $3 AND started_at < $4 AND lease_until > `+s.d.nowExpr(),
		KindImport, KindSync, string(RunRunning), micros(t)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count running runs: %w", err)
	}
	return n, nil
}
