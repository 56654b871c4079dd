package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Reject is a source row a run did not send, and why. A warning (Checkpoint.Warnings) has the
// same form: a row that was sent without one of its values, and why.
type Reject struct {
	Ordinal int64  // the row's Record.Ordinal; unique within a run
	Line    int    // where a person finds the row (CSV line, worksheet row, SQL row number)
	Sheet   string // worksheet, for XLSX sources
	Column  string // the offending column, when one is to blame
	Value   string // the offending value, as read
	Code    string // a stable, machine-readable code
	Reason  string // a sentence for people
	// Row is the whole source row, as EncodeRow wrote it; "" when not known (rows recorded
	// before schema version 6).
	Row string
	// More are the row's other problems, when a rejected row has several (rejects recorded
	// from schema version 20 on; a warning has one problem). The row counts once, under Code.
	More []Problem
}

// Problem is one problem of a rejected row.
type Problem struct {
	Column string `json:"column,omitempty"`
	Value  string `json:"value,omitempty"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Problems returns every problem of the row: its own (Column, Value, Code, Reason) first,
// then More.
func (r Reject) Problems() []Problem {
	return append([]Problem{{Column: r.Column, Value: r.Value, Code: r.Code, Reason: r.Reason}}, r.More...)
}

// encodeMore is the more_problems column of a reject: "" for none.
func encodeMore(more []Problem) string {
	if len(more) == 0 {
		return ""
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(more); err != nil {
		return "" // a []Problem always encodes
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func decodeMore(s string) ([]Problem, error) {
	if s == "" {
		return nil, nil
	}
	var more []Problem
	if err := json.Unmarshal([]byte(s), &more); err != nil {
		return nil, fmt.Errorf("decode the problems of a rejected row: %w", err)
	}
	return more, nil
}

// EncodeRow encodes a source row's values for Reject.Row: a JSON array of strings. Bytes
// that are not UTF-8 become U+FFFD (a database's text column takes nothing else).
func EncodeRow(values []string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(values); err != nil {
		return "" // a []string always encodes
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// DecodeRow decodes a Reject.Row; "" is no values.
func DecodeRow(row string) ([]string, error) {
	if row == "" {
		return nil, nil
	}
	var v []string
	if err := json.Unmarshal([]byte(row), &v); err != nil {
		return nil, fmt.Errorf("decode rejected row: %w", err)
	}
	return v, nil
}

// insertRejects writes rejects (table subsync_reject) or warnings (subsync_warning), ignoring
// ones already recorded (a resumed run never records a row twice). A row's warnings stand
// together in rejects; each gets its place among them (seq).
func insertRejects(ctx context.Context, tx execer, d Dialect, runID int64, table string, rejects []Reject) error {
	warnings := table == "subsync_warning"
	cols, conflict, into := 10, "(run_id, ordinal)", "(run_id, ordinal, line, sheet, col, value, code, reason, row_values, more_problems)"
	if warnings {
		cols, conflict, into = 10, "(run_id, ordinal, seq)", "(run_id, ordinal, line, sheet, col, value, code, reason, row_values, seq)"
	}
	maxRows := d.bulkRows()
	seq, prev := 0, int64(-1)
	for len(rejects) > 0 {
		n := min(len(rejects), maxRows)
		var b strings.Builder
		b.WriteString("INSERT INTO " + table + " " + into + " VALUES ")
		d.placeholders(&b, n, cols, 1)
		b.WriteString(" ON CONFLICT " + conflict + " DO NOTHING")
		args := make([]any, 0, n*cols)
		for _, r := range rejects[:n] {
			args = append(args, runID, r.Ordinal, r.Line, r.Sheet, r.Column, r.Value, r.Code, r.Reason, r.Row)
			if !warnings {
				args = append(args, encodeMore(r.More))
			} else {
				if r.Ordinal != prev {
					seq, prev = 0, r.Ordinal
				}
				args = append(args, seq)
				seq++
			}
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("record %s of run %d: %w", strings.TrimPrefix(table, "subsync_")+"s", runID, err)
		}
		rejects = rejects[n:]
	}
	return nil
}

// SetSourceHeader records the header of a run's source (the column names of a SQL query), once
// per run: the rejects export writes it above the rejected rows. The caller holds the lease.
func (s *Store) SetSourceHeader(ctx context.Context, runID int64, owner string, header []string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_run SET source_header = $3 WHERE id = $1 AND lease_owner = $2`,
		runID, owner, EncodeRow(header))
	if err != nil {
		return fmt.Errorf("record the source header of run %d: %w", runID, err)
	}
	return fenced(res, runID)
}

// SourceHeader returns the header of a run's source, nil when it was not recorded.
func (s *Store) SourceHeader(ctx context.Context, runID int64) ([]string, error) {
	var h string
	err := s.db.QueryRowContext(ctx, `SELECT source_header FROM subsync_run WHERE id = $1`, runID).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %d: %w", runID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read the source header of run %d: %w", runID, err)
	}
	return DecodeRow(h)
}

// Rejects streams the rejects of a run in source order to fn. It stops at fn's first error
// and returns it.
func (s *Store) Rejects(ctx context.Context, runID int64, fn func(Reject) error) error {
	return s.streamRejects(ctx, runID, "rejects", `SELECT ordinal, line, sheet, col, value, code, reason, row_values, more_problems
FROM subsync_reject WHERE run_id = $1 ORDER BY ordinal`, fn)
}

// Warnings streams the warnings of a run in source order to fn (a row's warnings in the order
// mapping found them). It stops at fn's first error and returns it.
func (s *Store) Warnings(ctx context.Context, runID int64, fn func(Reject) error) error {
	return s.streamRejects(ctx, runID, "warnings", `SELECT ordinal, line, sheet, col, value, code, reason, row_values, ''
FROM subsync_warning WHERE run_id = $1 ORDER BY ordinal, seq`, fn)
}

// warningsOfSentRows is Warnings without the rows that were rejected after all (a duplicate,
// a row the service refused): the export lists those once, as rejects.
const warningsOfSentRows = `SELECT ordinal, line, sheet, col, value, code, reason, row_values, ''
FROM subsync_warning w WHERE run_id = $1
    AND NOT EXISTS (SELECT 1 FROM subsync_reject r WHERE r.run_id = w.run_id AND r.ordinal = w.ordinal)
ORDER BY ordinal, seq`

func (s *Store) streamRejects(ctx context.Context, runID int64, what, query string, fn func(Reject) error) error {
	rows, err := s.db.QueryContext(ctx, query, runID)
	if err != nil {
		return fmt.Errorf("read %s of run %d: %w", what, runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Reject
		var more string
		if err := rows.Scan(&r.Ordinal, &r.Line, &r.Sheet, &r.Column, &r.Value, &r.Code, &r.Reason, &r.Row, &more); err != nil {
			return fmt.Errorf("read %s of run %d: %w", what, runID, err)
		}
		if r.More, err = decodeMore(more); err != nil {
			return fmt.Errorf("read %s of run %d line %d: %w", what, runID, r.Line, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s of run %d: %w", what, runID, err)
	}
	return nil
}

// RejectsWithCode returns how many rows of a run were rejected with the code (one of
// mapping's Code constants), and the reason given for most of them ("" when none was).
func (s *Store) RejectsWithCode(ctx context.Context, runID int64, code string) (n int64, reason string, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM subsync_reject WHERE run_id = $1 AND code = $2`,
		runID, code).Scan(&n)
	if err == nil && n > 0 {
		err = s.db.QueryRowContext(ctx, `SELECT reason FROM subsync_reject WHERE run_id = $1 AND code = $2
GROUP BY reason ORDER BY COUNT(*) DESC, reason LIMIT 1`, runID, code).Scan(&reason)
	}
	if err != nil {
		return 0, "", fmt.Errorf("count rejects of run %d with code %s: %w", runID, code, err)
	}
	return n, reason, nil
}

// WarningCounts returns how many warnings a run recorded, by code.
func (s *Store) WarningCounts(ctx context.Context, runID int64) (map[string]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT code, COUNT(*) FROM subsync_warning WHERE run_id = $1 GROUP BY code`, runID)
	if err != nil {
		return nil, fmt.Errorf("count warnings of run %d: %w", runID, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var code string
		var n int64
		if err := rows.Scan(&code, &n); err != nil {
			return nil, fmt.Errorf("count warnings of run %d: %w", runID, err)
		}
		out[code] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count warnings of run %d: %w", runID, err)
	}
	return out, nil
}
