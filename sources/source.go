// Package sources streams contact records out of CSV files, Excel workbooks and SQL databases.
//
// Every kind implements [Reader], whose contract is modelled on encoding/csv's Reader.Read:
//
//   - Header returns the column names, trimmed, in source order. It is valid from the moment
//     the constructor returns without error: a source whose header cannot be read fails there,
//     with an error that says why. An empty header cell is named "column N" (its 1-based
//     position); a name seen before (compared case-insensitively) gets a suffix: "Phone",
//     "Phone (2)". Trailing empty header cells are dropped.
//   - Next returns the next data row. At the end of the data it returns io.EOF, and keeps
//     returning io.EOF on every later call.
//   - Rows whose cells are all empty (a blank line, ";;;" from Excel, an empty worksheet row,
//     a row of NULLs) are skipped: they are not data rows and get no Ordinal.
//   - A row that cannot be read (a ragged row, an unterminated quote, a cell that cannot be
//     decoded) is returned as a *RowError, with the Record's Line and Ordinal set and Values
//     holding what could be read (for reject reports; it may not be aligned with Header).
//     The error is not fatal: the caller records it and calls Next again, and the rest of the
//     source flows.
//   - Any other error is fatal (I/O, a truncated workbook, a lost database connection, ctx done):
//     the caller stops reading. A fatal error is returned again by every later call.
//   - Record.Values is aligned with Header and is not reused between calls: the caller may keep it.
//   - Next honours ctx: once ctx is done, Next returns an error wrapping ctx.Err().
//   - Close releases the source (files, temporary files, iterators, transactions). It is safe
//     to call twice. Next after Close returns ErrClosed.
//
// Readers are not safe for concurrent use; Progress may be called from another goroutine
// (a progress bar) while one goroutine calls Next.
//
// [Open] picks the kind from a [Config]: Kind "csv", "xlsx" or "sql", or, with Kind empty, from
// the file name checked against the file's content, so a workbook renamed to .csv, a CSV file
// renamed to .xlsx, an old .xls or an encrypted workbook fails with a message that says so.
// [OpenCSV], [OpenXLSX] and [OpenSQL] open one kind with its own options.
package sources

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// A LineReader is a [Reader] that can hand out a simple record as its line, unsplit, for a
// caller that often needs only a part of it (a delta sync that finds most rows unchanged
// from their bytes). [CSVReader] is one.
type LineReader interface {
	Reader
	// NextLine is Next, except that a simple record comes back with Values nil and line
	// holding the record's text as read: one line without a quote, of valid text (no NUL
	// byte, nothing a value is checked for), not blank, with exactly the header's number of
	// fields. Its values are SplitLine(line, Delimiter()), the very values Next would have
	// returned. Any other record comes back as Next returns it, with line "".
	NextLine(ctx context.Context) (rec Record, line string, err error)
	// NextLines reads up to len(recs) records into recs and lines as NextLine would, one
	// after the other, and returns how many. It stops after a record that is a row error,
	// returning that *RowError (the record is recs[n-1]); at the end it returns 0 and io.EOF.
	NextLines(ctx context.Context, recs []Record, lines []string) (n int, err error)
	// Delimiter is the field delimiter of the lines.
	Delimiter() rune
}

// A Truncated reader can tell that its source was cut short: once Next returned io.EOF,
// Truncated returns the line of the last record when that record could not be read (a row
// error) and the source ends in it without a line end, as a file does that was cut while it
// was copied or written; else 0. A read that ends so is not complete: it does not tell who
// left the source. (A file cut where its last line still reads well cannot be told.)
// [CSVReader] is one.
type Truncated interface {
	Truncated() int
}

// SplitLine returns the values of a line NextLine returned: the parts between the delimiters.
func SplitLine(line string, delim rune) []string { return strings.Split(line, string(delim)) }

// Field returns the value of column i of a line NextLine returned, without splitting it.
func Field(line string, delim rune, i int) string {
	d := byte(delim)
	for ; i > 0; i-- {
		k := strings.IndexByte(line, d)
		if k < 0 {
			return ""
		}
		line = line[k+1:]
	}
	if k := strings.IndexByte(line, d); k >= 0 {
		return line[:k]
	}
	return line
}

// RowError describes a row that could not be read. The rest of the source still flows. As
// encoding/csv's ParseError, it carries its cause: Err is one of the row errors below
// (ErrFieldCount, ErrQuote, …) with the details, so errors.Is(err, ErrInvalidUTF8) tells
// what went wrong, and the message says it for a person.
type RowError struct {
	Line   int
	Sheet  string
	Column int // 1-based column, 0 when not known
	Err    error
}

func (e *RowError) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.Sheet != "" {
		where = fmt.Sprintf("sheet %q row %d", e.Sheet, e.Line)
	}
	if e.Column > 0 {
		where += fmt.Sprintf(" column %d", e.Column)
	}
	if e.Err == nil {
		return where + ": the row could not be read"
	}
	return where + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *RowError) Unwrap() error { return e.Err }

// Causes of a *RowError, with errors.Is.
var (
	// ErrFieldCount: a CSV row has more or fewer fields than the header.
	ErrFieldCount = errors.New("wrong number of fields")
	// ErrQuote: a quoted CSV field is never closed, or has text after its closing quote.
	ErrQuote = errors.New("malformed quoted field")
	// ErrLineTooLong: a CSV line (or quoted field) is longer than the reader's limit.
	ErrLineTooLong = errors.New("line too long")
	// ErrInvalidUTF8: a cell is not valid UTF-8 (the file's encoding is set wrong).
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrBinary: a cell holds a NUL byte (binary data).
	ErrBinary = errors.New("binary data")
	// ErrCell: a cell's value cannot be read or turned into text (a worksheet cell, a
	// database value of an unknown type).
	ErrCell = errors.New("unreadable cell")
	// ErrUnnamedColumn: a value stands in a column that has no name in the header.
	ErrUnnamedColumn = errors.New("value in a column without a name")
)

// rowCause is the Err of a RowError: a message for a person that unwraps to a cause.
type rowCause struct {
	msg   string
	cause error
}

func (e *rowCause) Error() string { return e.msg }
func (e *rowCause) Unwrap() error { return e.cause }

// because returns a RowError cause: cause (a row error above) with a message of its own.
func because(cause error, format string, args ...any) error {
	return &rowCause{msg: fmt.Sprintf(format, args...), cause: cause}
}

// Errors a caller may decide by, with errors.Is. Each is wrapped with the file and the details.
var (
	// ErrClosed is returned by Next after Close.
	ErrClosed = errors.New("source is closed")
	// ErrNoHeader means the source has no readable header row (an empty file or sheet, a
	// header_row past the end, a header line that cannot be parsed).
	ErrNoHeader = errors.New("no readable header row")
	// ErrContentMismatch means the file's content is not what its name (or the configured
	// kind) says: a workbook named .csv, a text file named .xlsx, binary data.
	ErrContentMismatch = errors.New("file content does not match its kind")
	// ErrLegacyXLS means the file is an Excel 97-2003 workbook (.xls), which subsync does not
	// read: save it as .xlsx (or CSV).
	ErrLegacyXLS = errors.New("an Excel 97-2003 .xls workbook is not supported: save it as .xlsx or CSV")
	// ErrEncryptedWorkbook means the workbook is password-protected (encrypted).
	ErrEncryptedWorkbook = errors.New("the workbook is encrypted (password-protected): save a copy without a password")
	// ErrTooLarge means a workbook would unpack to more than the configured limit, as a zip
	// bomb does.
	ErrTooLarge = errors.New("the workbook unpacks to more than the allowed size")
	// ErrMixedEncoding means a text file without a byte order mark holds many lines of UTF-8
	// letters and many lines that are not UTF-8, so its encoding cannot be told: it must be
	// configured.
	ErrMixedEncoding = errors.New("the file mixes encodings")
)
