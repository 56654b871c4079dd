package state

import (
	"context"
	"fmt"
	"time"
)

// Worker is a long-lived worker of the database (subsync run), as its heartbeat tells.
type Worker struct {
	ID         string
	StartedAt  time.Time
	SeenAt     time.Time // its latest heartbeat
	AliveUntil time.Time // when it counts as gone unless it beats again
}

// workerForgotten is how long after its heartbeat expired a worker's row is deleted.
const workerForgotten = 24 * time.Hour

// WorkerHeartbeat records that the worker id, started at started, is alive for ttl from now,
// by the database's clock (as leases are), and forgets workers gone for a day.
func (s *Store) WorkerHeartbeat(ctx context.Context, id string, started time.Time, ttl time.Duration) error {
	now := s.d.nowExpr()
	_, err := s.db.ExecContext(ctx, `INSERT INTO subsync_worker (id, started_at, seen_at, alive_until)
VALUES ($1, $2, `+now+`, `+now+` + $3)
ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at, alive_until = excluded.alive_until`,
		id, micros(started), ttl.Microseconds())
	if err != nil {
		return fmt.Errorf("record the heartbeat of worker %s: %w", id, err)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM subsync_worker WHERE alive_until < `+now+` - $1`,
		workerForgotten.Microseconds()); err != nil {
		return fmt.Errorf("forget the workers gone: %w", err)
	}
	return nil
}

// WorkerGone deletes the worker's row: it stopped working jobs.
func (s *Store) WorkerGone(ctx context.Context, id string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM subsync_worker WHERE id = $1`, id); err != nil {
		return fmt.Errorf("record that worker %s stopped: %w", id, err)
	}
	return nil
}

// LiveWorkers lists the workers whose heartbeat has not expired by the database's clock,
// the longest running first.
func (s *Store) LiveWorkers(ctx context.Context) ([]Worker, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, started_at, seen_at, alive_until FROM subsync_worker
WHERE alive_until > `+s.d.nowExpr()+` ORDER BY started_at, id`)
	if err != nil {
		return nil, fmt.Errorf("read the live workers: %w", err)
	}
	defer rows.Close()
	var out []Worker
	for rows.Next() {
		var w Worker
		var started, seen, until int64
		if err := rows.Scan(&w.ID, &started, &seen, &until); err != nil {
			return nil, fmt.Errorf("read the live workers: %w", err)
		}
		w.StartedAt, w.SeenAt, w.AliveUntil = fromMicros(started), fromMicros(seen), fromMicros(until)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the live workers: %w", err)
	}
	return out, nil
}
