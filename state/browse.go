package state

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// RejectsPage returns up to limit rejects of a run whose ordinal is above afterOrdinal, in
// source order: one page of a run's rejects.
func (s *Store) RejectsPage(ctx context.Context, runID, afterOrdinal int64, limit int) ([]Reject, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT ordinal, line, sheet, col, value, code, reason, more_problems
FROM subsync_reject WHERE run_id = $1 AND ordinal > $2 ORDER BY ordinal LIMIT $3`, runID, afterOrdinal, limit)
	if err != nil {
		return nil, fmt.Errorf("read rejects of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []Reject
	for rows.Next() {
		var r Reject
		var more string
		if err := rows.Scan(&r.Ordinal, &r.Line, &r.Sheet, &r.Column, &r.Value, &r.Code, &r.Reason, &more); err != nil {
			return nil, fmt.Errorf("read rejects of run %d: %w", runID, err)
		}
		if r.More, err = decodeMore(more); err != nil {
			return nil, fmt.Errorf("read rejects of run %d line %d: %w", runID, r.Line, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rejects of run %d: %w", runID, err)
	}
	return out, nil
}

// SuppressionEntry is an entry of the suppression list with how it was learnt and where its
// write-back to one target stands.
type SuppressionEntry struct {
	Suppression
	// LearntAt is when a status pull recorded the change (zero when the entry came from
	// elsewhere, such as a source row saying unsubscribed).
	LearntAt time.Time
	// PullRunID is the status pull run that recorded it (0 when unknown).
	PullRunID int64
	// WriteBackTarget, WriteBackState (WriteBackPending, WriteBackDone or
	// WriteBackUnmatched), WriteBackAttempts, WriteBackUnmatched (the writes that matched
	// nothing) and WriteBackError describe the write-back of the change; empty when none was
	// queued.
	WriteBackTarget    string
	WriteBackState     string
	WriteBackAttempts  int
	WriteBackUnmatched int
	WriteBackError     string
}

// SearchSuppressions returns up to limit entries of the suppression list whose e-mail
// contains query (exactly equals it with exact), newest change first, one line per
// write-back target.
func (s *Store) SearchSuppressions(ctx context.Context, query string, exact bool, limit int) ([]SuppressionEntry, error) {
	q := strings.TrimSpace(query)
	cond := "s.email = $1"
	if exact {
		q = NormaliseEmail(q)
	} else {
		q = "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(strings.ToLower(q)) + "%"
		cond = `s.email LIKE $1 ESCAPE '\'`
	}
	rows, err := s.db.QueryContext(ctx, `SELECT s.list_id, s.email, s.status, s.changed_at,
    COALESCE(c.recorded_at, 0),
    COALESCE((SELECT r.id FROM subsync_run r WHERE r.kind = 'status_pull' AND r.started_at > 0
        AND r.started_at <= c.recorded_at ORDER BY r.started_at DESC LIMIT 1), 0),
    COALESCE(w.target, ''), COALESCE(w.state, ''), COALESCE(w.attempts, 0), COALESCE(w.unmatched, 0),
    COALESCE(w.last_error, '')
FROM subsync_suppression s
LEFT JOIN subsync_status_change c ON c.id = (SELECT c2.id FROM subsync_status_change c2
    WHERE c2.email = s.email AND c2.status = s.status AND c2.list_id = s.list_id
    ORDER BY c2.changed_at DESC, c2.id DESC LIMIT 1)
LEFT JOIN subsync_writeback w ON w.change_id = c.id
WHERE `+cond+`
ORDER BY s.changed_at DESC, s.email, s.list_id LIMIT $2`, q, limit)
	if err != nil {
		return nil, fmt.Errorf("search suppressions: %w", err)
	}
	defer rows.Close()
	var out []SuppressionEntry
	for rows.Next() {
		var e SuppressionEntry
		var changed, learnt int64
		if err := rows.Scan(&e.ListID, &e.Email, &e.Status, &changed, &learnt, &e.PullRunID,
			&e.WriteBackTarget, &e.WriteBackState, &e.WriteBackAttempts, &e.WriteBackUnmatched, &e.WriteBackError); err != nil {
			return nil, fmt.Errorf("search suppressions: %w", err)
		}
		e.ChangedAt = fromMicros(changed)
		if learnt > 0 {
			e.LearntAt = fromMicros(learnt)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search suppressions: %w", err)
	}
	return out, nil
}
