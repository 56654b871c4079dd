// Package sources streams contact records out of CSV files, Excel workbooks and SQL databases.
//
// Every kind implements [Reader], whose contract is modelled on encoding/csv's Reader.Read:
//
//   - Header returns the column names, trimmed, in source order. It is valid from the moment
//     the constructor returns without error: a source whose header cannot be read fails there.
//   - Next returns the next data row. At the end of the data it returns io.EOF, and keeps
//     returning io.EOF on every later call.
//   - A row that cannot be read (a ragged row, an unterminated quote, a cell that cannot be
//     decoded) is returned as a *RowError, with the Record's Line and Ordinal set. The error
//     is not fatal: the caller records it and calls Next again, and the rest of the source flows.
//   - Any other error is fatal (I/O, a truncated workbook, a lost database connection, ctx done):
//     the caller stops reading.
//   - Record.Values is aligned with Header and is not reused between calls: the caller may keep it.
//   - Close releases the source (files, iterators, transactions). It is safe to call twice.
//
// Readers are not safe for concurrent use.
package sources

import (
	"context"
	"fmt"
)

// Record is one data row of a source.
type Record struct {
	// Ordinal counts data rows from 1, including rows returned as *RowError, in source order.
	// It is the resume position of a run: a run that resumes after ordinal N skips rows 1..N.
	Ordinal int64
	// Line is where the row starts for a person looking at the source: the 1-based physical
	// line of a CSV file (a quoted field with newlines spans several), the row number of a
	// worksheet, the 1-based row number of a SQL result.
	Line int
	// Sheet names the worksheet of an XLSX source; empty for other kinds.
	Sheet string
	// Values holds the cells as text, aligned with Header.
	Values []string
}

// Progress reports how far a Reader has come, for progress bars and run stats.
type Progress struct {
	Rows       int64 // data rows returned so far (including row errors)
	Bytes      int64 // bytes consumed so far, where the kind knows (files); 0 otherwise
	TotalBytes int64 // total size where known (files); 0 when unknown
	TotalRows  int64 // total rows where known in advance; 0 when unknown
}

// Reader is the one iteration contract every source implements; see the package doc.
type Reader interface {
	Header() []string
	Next(ctx context.Context) (Record, error)
	Progress() Progress
	Close() error
}

// RowError describes a row that could not be read. The rest of the source still flows.
type RowError struct {
	Line    int
	Sheet   string
	Column  int // 1-based column, 0 when not known
	Message string
}

func (e *RowError) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.Sheet != "" {
		where = fmt.Sprintf("sheet %q row %d", e.Sheet, e.Line)
	}
	if e.Column > 0 {
		where += fmt.Sprintf(" column %d", e.Column)
	}
	return where + ": " + e.Message
}
