package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/subsync/subsync/internal/rejectfile"
)

// ExportRows gives fn the rows of a run's rejects export, its header first, for a person to
// fix in a spreadsheet and import again: every rejected row whole, under the source's own
// header, followed by the rejectfile.Columns; then the rows sent with a warning (a value dropped,
// see mapping's on_invalid), one a row. A row with several problems lists them all in one
// line, the columns, codes and reasons joined with "; " in the same order. A row with more
// cells than the header (a ragged CSV row) has the extra cells joined into its last one, with
// ", ". Runs recorded before schema version 6 have no source header: their export is the
// former one, (line, sheet, column, value, code, reason).
//
// The cells are as recorded: making them safe to open (rejectfile.Neutralise) is the CSV writer's
// business. fn must not keep the slice it is given, which holds the next row after it.
func (s *Store) ExportRows(ctx context.Context, runID int64, fn func(cells []string) error) error {
	header, err := s.SourceHeader(ctx, runID)
	if err != nil {
		return err
	}
	if len(header) == 0 {
		return s.exportRowsV1(ctx, runID, fn)
	}
	return s.exportRows(ctx, runID, header, fn)
}

// exportRowsV1 gives the rows of the export of a run recorded without its source header.
func (s *Store) exportRowsV1(ctx context.Context, runID int64, fn func([]string) error) error {
	if err := fn([]string{"line", "sheet", "column", "value", "code", "reason"}); err != nil {
		return err
	}
	return s.Rejects(ctx, runID, func(r Reject) error {
		return fn([]string{strconv.Itoa(r.Line), r.Sheet, r.Column, r.Value, r.Code, r.Reason})
	})
}

func (s *Store) exportRows(ctx context.Context, runID int64, header []string, fn func([]string) error) error {
	rec := make([]string, len(header)+len(rejectfile.Columns))
	copy(rec, header)
	copy(rec[len(header):], rejectfile.Columns)
	if err := fn(rec); err != nil {
		return err
	}
	write := func(kind string, r Reject) error {
		values, err := DecodeRow(r.Row)
		if err != nil {
			return fmt.Errorf("run %d line %d: %w", runID, r.Line, err)
		}
		clear(rec)
		copy(rec, values)
		if n := len(header); len(values) > n {
			rec[n-1] = strings.Join(values[n-1:], ", ")
		}
		cols, codes, reasons := joinProblems(r.Problems())
		copy(rec[len(header):], []string{kind, strconv.Itoa(r.Line), cols, codes, reasons})
		return fn(rec)
	}
	if err := s.Rejects(ctx, runID, func(r Reject) error { return write(rejectfile.Rejected, r) }); err != nil {
		return err
	}
	// A row's warnings are joined into one line of the export.
	var row Reject
	pending := false
	err := s.streamRejects(ctx, runID, "warnings", warningsOfSentRows, func(r Reject) error {
		if pending && r.Ordinal == row.Ordinal {
			row.More = append(row.More, r.Problems()...)
			return nil
		}
		if pending {
			if err := write(rejectfile.Warning, row); err != nil {
				return err
			}
		}
		row, pending = r, true
		return nil
	})
	if err != nil {
		return err
	}
	if pending {
		return write(rejectfile.Warning, row)
	}
	return nil
}

// joinProblems joins the columns, codes and reasons of a row's problems (a rejected row's,
// or the warnings of a row sent), each with "; ", in the same order, for the export's
// subsync:column, subsync:code and subsync:reason.
func joinProblems(ps []Problem) (cols, codes, reasons string) {
	c, k, r := make([]string, len(ps)), make([]string, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		c[i], k[i], r[i] = p.Column, p.Code, p.Reason
	}
	return strings.Join(c, "; "), strings.Join(k, "; "), strings.Join(r, "; ")
}

// SetSourceDelimiter records the field delimiter of a run's source (a CSV file's, as read),
// once per attempt: the rejects export uses it, so that a semicolon file gives a semicolon
// export. The caller holds the lease.
func (s *Store) SetSourceDelimiter(ctx context.Context, runID int64, owner string, delimiter rune) error {
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_run SET source_delimiter = $3 WHERE id = $1 AND lease_owner = $2`,
		runID, owner, string(delimiter))
	if err != nil {
		return fmt.Errorf("record the source delimiter of run %d: %w", runID, err)
	}
	return fenced(res, runID)
}

// SourceDelimiter returns the field delimiter of a run's source, 0 when none was recorded (a
// workbook, a SQL query, a run recorded before schema version 25).
func (s *Store) SourceDelimiter(ctx context.Context, runID int64) (rune, error) {
	var d string
	err := s.db.QueryRowContext(ctx, `SELECT source_delimiter FROM subsync_run WHERE id = $1`, runID).Scan(&d)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("run %d: %w", runID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("read the source delimiter of run %d: %w", runID, err)
	}
	for _, r := range d {
		return r, nil
	}
	return 0, nil
}
