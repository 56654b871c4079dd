package state

import (
	"context"
	"fmt"
	"time"
)

// LastSuccess is when the latest completed run of a kind (and, for syncs, of a sync name)
// finished.
type LastSuccess struct {
	Kind string
	Name string // the sync's name for sync runs; empty for imports and status pulls
	At   time.Time
}

// LastSuccesses returns, per sync and per other kind, when its latest completed run finished.
func (s *Store) LastSuccesses(ctx context.Context) ([]LastSuccess, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT kind, CASE WHEN kind = 'sync' THEN name ELSE '' END AS n,
    MAX(finished_at) FROM subsync_run WHERE state = 'completed' GROUP BY kind, n ORDER BY kind, n`)
	if err != nil {
		return nil, fmt.Errorf("read last successes: %w", err)
	}
	defer rows.Close()
	var out []LastSuccess
	for rows.Next() {
		var l LastSuccess
		var at int64
		if err := rows.Scan(&l.Kind, &l.Name, &at); err != nil {
			return nil, fmt.Errorf("read last successes: %w", err)
		}
		l.At = fromMicros(at)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read last successes: %w", err)
	}
	return out, nil
}
