package state

import (
	"context"
	"fmt"
)

// CodeSummary is how many of a run's rejects (or warnings) have one code, and the first of
// them as an example.
type CodeSummary struct {
	Code  string
	Count int64
	First Reject
}

// RejectSummary counts a run's rejected rows by code (a row with several problems under its
// first), most first, each with its first row as an example.
func (s *Store) RejectSummary(ctx context.Context, runID int64) ([]CodeSummary, error) {
	return s.codeSummary(ctx, runID, "subsync_reject", `SELECT ordinal, line, sheet, col, value, code, reason
FROM subsync_reject WHERE run_id = $1 AND code = $2 AND ordinal = $3`)
}

// WarningSummary counts a run's warnings (values dropped from rows that were sent) by code,
// most first, each with its first warning as an example.
func (s *Store) WarningSummary(ctx context.Context, runID int64) ([]CodeSummary, error) {
	return s.codeSummary(ctx, runID, "subsync_warning", `SELECT ordinal, line, sheet, col, value, code, reason
FROM subsync_warning WHERE run_id = $1 AND code = $2 AND ordinal = $3 ORDER BY seq LIMIT 1`)
}

func (s *Store) codeSummary(ctx context.Context, runID int64, table, first string) ([]CodeSummary, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT code, COUNT(*), MIN(ordinal) FROM `+table+`
WHERE run_id = $1 GROUP BY code ORDER BY COUNT(*) DESC, code`, runID)
	if err != nil {
		return nil, fmt.Errorf("summarise %s of run %d: %w", table, runID, err)
	}
	var out []CodeSummary
	var ords []int64
	for rows.Next() {
		var c CodeSummary
		var ord int64
		if err := rows.Scan(&c.Code, &c.Count, &ord); err != nil {
			rows.Close()
			return nil, fmt.Errorf("summarise %s of run %d: %w", table, runID, err)
		}
		out = append(out, c)
		ords = append(ords, ord)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("summarise %s of run %d: %w", table, runID, err)
	}
	for i := range out {
		r := &out[i].First
		if err := s.db.QueryRowContext(ctx, first, runID, out[i].Code, ords[i]).
			Scan(&r.Ordinal, &r.Line, &r.Sheet, &r.Column, &r.Value, &r.Code, &r.Reason); err != nil {
			return nil, fmt.Errorf("summarise %s of run %d: %w", table, runID, err)
		}
	}
	return out, nil
}

// Warning is one warning of a run, with its place among the row's warnings (Seq): a page of
// warnings goes on after the last one's Ordinal and Seq.
type Warning struct {
	Reject
	Seq int64
}

// WarningsPage returns up to limit warnings of a run after the one at (afterOrdinal,
// afterSeq), in source order: one page of a run's warnings.
func (s *Store) WarningsPage(ctx context.Context, runID, afterOrdinal, afterSeq int64, limit int) ([]Warning, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT ordinal, seq, line, sheet, col, value, code, reason FROM subsync_warning
WHERE run_id = $1 AND (ordinal > $2 OR (ordinal = $2 AND seq > $3)) ORDER BY ordinal, seq LIMIT $4`,
		runID, afterOrdinal, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("read warnings of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []Warning
	for rows.Next() {
		var w Warning
		if err := rows.Scan(&w.Ordinal, &w.Seq, &w.Line, &w.Sheet, &w.Column, &w.Value, &w.Code, &w.Reason); err != nil {
			return nil, fmt.Errorf("read warnings of run %d: %w", runID, err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read warnings of run %d: %w", runID, err)
	}
	return out, nil
}
