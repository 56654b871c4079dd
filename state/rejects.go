package state

import (
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Reject codes set by the run itself. Mapping rejects (a row the source could not read
// included) carry mapping's own codes.
const (
	// CodeRefused: the service refused the row (a 422 isolated to this row).
	CodeRefused = "refused"
	// CodeDuplicate: the e-mail appeared earlier in the run and the dedupe policy rejects it.
	CodeDuplicate = "duplicate"
)

// Reject is a source row a run did not send, and why.
type Reject struct {
	Ordinal int64  // the row's Record.Ordinal; unique within a run
	Line    int    // where a person finds the row (CSV line, worksheet row, SQL row number)
	Sheet   string // worksheet, for XLSX sources
	Column  string // the offending column, when one is to blame
	Value   string // the offending value, as read
	Code    string // a stable, machine-readable code
	Reason  string // a sentence for people
}

// insertRejects writes rejects, ignoring ones already recorded (a resumed run never records
// a row twice).
func insertRejects(ctx context.Context, tx *sql.Tx, d Dialect, runID int64, rejects []Reject) error {
	const cols = 8
	maxRows := d.bulkRows()
	for len(rejects) > 0 {
		n := min(len(rejects), maxRows)
		var b strings.Builder
		b.WriteString("INSERT INTO subsync_reject (run_id, ordinal, line, sheet, col, value, code, reason) VALUES ")
		d.placeholders(&b, n, cols, 1)
		b.WriteString(" ON CONFLICT (run_id, ordinal) DO NOTHING")
		args := make([]any, 0, n*cols)
		for _, r := range rejects[:n] {
			args = append(args, runID, r.Ordinal, r.Line, r.Sheet, r.Column, r.Value, r.Code, r.Reason)
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("record rejects of run %d: %w", runID, err)
		}
		rejects = rejects[n:]
	}
	return nil
}

// Rejects streams the rejects of a run in source order to fn. It stops at fn's first error
// and returns it.
func (s *Store) Rejects(ctx context.Context, runID int64, fn func(Reject) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT ordinal, line, sheet, col, value, code, reason
FROM subsync_reject WHERE run_id = $1 ORDER BY ordinal`, runID)
	if err != nil {
		return fmt.Errorf("read rejects of run %d: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Reject
		if err := rows.Scan(&r.Ordinal, &r.Line, &r.Sheet, &r.Column, &r.Value, &r.Code, &r.Reason); err != nil {
			return fmt.Errorf("read rejects of run %d: %w", runID, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read rejects of run %d: %w", runID, err)
	}
	return nil
}

// WriteRejectsCSV writes the rejects of a run as CSV with a header row
// (line, sheet, column, value, code, reason). Cells that a spreadsheet would take for a
// formula — starting with '=', '+', '-', '@', a tab or a carriage return — are prefixed with
// a single quote, so opening the export never runs anything.
func (s *Store) WriteRejectsCSV(ctx context.Context, w io.Writer, runID int64) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"line", "sheet", "column", "value", "code", "reason"}); err != nil {
		return fmt.Errorf("write rejects csv: %w", err)
	}
	err := s.Rejects(ctx, runID, func(r Reject) error {
		rec := []string{strconv.Itoa(r.Line), r.Sheet, r.Column, r.Value, r.Code, r.Reason}
		for i := range rec {
			rec[i] = NeutraliseCell(rec[i])
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write rejects csv: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write rejects csv: %w", err)
	}
	return nil
}

// NeutraliseCell prefixes v with a single quote when a spreadsheet would read it as a formula
// (it starts with '=', '+', '-', '@', a tab or a carriage return).
func NeutraliseCell(v string) string {
	if v == "" {
		return v
	}
	switch v[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + v
	}
	return v
}
