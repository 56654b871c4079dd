package mapping

import (
	"errors"
	"strconv"
	"strings"

	"github.com/subsync/subsync/sources"
)

// Reject codes, every one a run records (mapping's, and the service's CodeRefused). They are
// stable: run history, exported reject files and scripts rely on them.
const (
	CodeMissingEmail    = "missing_email"    // the e-mail column is empty
	CodeInvalidEmail    = "invalid_email"    // the e-mail address fails the syntax check
	CodeInvalidPhone    = "invalid_phone"    // the phone number cannot be made E.164
	CodeInvalidDate     = "invalid_date"     // a birthday or date field is not a date, or out of range
	CodeInvalidNumber   = "invalid_number"   // a number field holds no number
	CodeInvalidChoice   = "invalid_choice"   // a choice field holds a value not among its choices
	CodeInvalidConsent  = "invalid_consent"  // a consent field is neither yes nor no
	CodeInvalidGender   = "invalid_gender"   // a gender subsync does not recognise
	CodeInvalidStatus   = "invalid_status"   // a status other than active, unsubscribed or bounce
	CodeInvalidEncoding = "invalid_encoding" // a value is not valid UTF-8 (the file's encoding is wrong), or binary data
	CodeTooLong         = "too_long"         // a value longer than its field allows (or a line over the reader's limit); never truncated
	CodeDuplicateEmail  = "duplicate_email"  // a second row for an e-mail address (duplicates = "reject")
	CodeRowUnreadable   = "row_unreadable"   // the source could not read the row (a *sources.RowError of another cause)
	CodeDuplicateKey    = "duplicate_key"    // the source key (the column mapped to external_id) is on an earlier row with another e-mail
	CodeKeyConflict     = "key_conflict"     // the e-mail address is on an earlier row with another source key
	CodeAmbiguousDate   = "ambiguous_date"   // a warning: a date that reads both day-first and month-first, in a column of no known order; not sent
	CodeYearlessDate    = "yearless_date"    // a warning: a date without a year (a birthday as --07-14); the service takes whole dates only; not sent
	CodeMultipleEmails  = "multiple_emails"  // a warning: the e-mail cell held several addresses; the first valid one was sent
	CodeErased          = "erased"           // the person was erased (subsync forget) and is never sent again; the reject holds no value
	CodeRefused         = "refused"          // the service refused the row (a 422 isolated to this row)
)

// maxRejectValue is how many characters of a rejected value a Reject keeps.
const maxRejectValue = 64

// Reject is a source row that is not sent, and why.
type Reject struct {
	Ordinal int64  `json:"ordinal"`
	Line    int    `json:"line"`
	Sheet   string `json:"sheet,omitempty"`
	Column  string `json:"column,omitempty"` // the source column at fault; "" for the whole row
	Value   string `json:"value,omitempty"`  // the value at fault, shortened to 64 characters
	Code    string `json:"code"`             // one of the Code constants
	Message string `json:"message"`          // for a person: what is wrong, in plain words
	// More are the row's other problems, when it has several: Map checks every column of a
	// row it rejects, so a person fixes the row in one go. The row counts once, under Code.
	More []Fault `json:"more,omitempty"`
}

// Fault is one problem of a rejected row besides the one its Reject names first.
type Fault struct {
	Column  string `json:"column,omitempty"`
	Value   string `json:"value,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (r *Reject) fault() Fault {
	return Fault{Column: r.Column, Value: r.Value, Code: r.Code, Message: r.Message}
}

// Faults returns every problem of the row, the first (the Reject's own) first.
func (r *Reject) Faults() []Fault {
	return append([]Fault{r.fault()}, r.More...)
}

// Error describes the reject on one line, with its position, and every problem of the row.
func (r *Reject) Error() string {
	where := "line " + strconv.Itoa(r.Line)
	if r.Sheet != "" {
		where = "sheet " + quote(r.Sheet) + " row " + strconv.Itoa(r.Line)
	}
	var b strings.Builder
	b.WriteString(where)
	for i, f := range r.Faults() {
		if i > 0 {
			b.WriteString(";")
		}
		if f.Column != "" {
			b.WriteString(" column " + quote(f.Column))
		}
		b.WriteString(": " + f.Code + ": " + f.Message)
	}
	return b.String()
}

// RejectFromRowError turns a row the source could not read into a reject. rec is the Record
// returned with the error (its Ordinal and Line are set). The code comes from the error's
// cause (see rowErrorCode).
func RejectFromRowError(rec sources.Record, err *sources.RowError) Reject {
	r := Reject{Ordinal: rec.Ordinal, Line: rec.Line, Sheet: rec.Sheet, Code: rowErrorCode(err), Message: "the row could not be read"}
	if err.Err != nil {
		r.Message = err.Err.Error()
	}
	if r.Line == 0 {
		r.Line = err.Line
	}
	if r.Sheet == "" {
		r.Sheet = err.Sheet
	}
	if err.Column > 0 {
		r.Message += " (column " + strconv.Itoa(err.Column) + ")"
		if err.Column <= len(rec.Values) {
			r.Value = shorten(rec.Values[err.Column-1], maxRejectValue)
		}
	}
	return r
}

// rowErrorCode is the reject code of a row error's cause: a cell in the wrong encoding (or
// binary data) is invalid_encoding, a line over the reader's limit too_long, anything else
// row_unreadable.
func rowErrorCode(err *sources.RowError) string {
	switch {
	case errors.Is(err, sources.ErrInvalidUTF8), errors.Is(err, sources.ErrBinary):
		return CodeInvalidEncoding
	case errors.Is(err, sources.ErrLineTooLong):
		return CodeTooLong
	}
	return CodeRowUnreadable
}

// KeyReject is the reject of a row of a mapping with a key column whose key or e-mail an
// earlier row of the run claimed: code is CodeDuplicateKey (the key came with another
// e-mail) or CodeKeyConflict (the e-mail came with another key).
func (m *Mapper) KeyReject(row *Row, code string) Reject {
	r := Reject{Ordinal: row.Ordinal, Line: row.Line, Sheet: row.Sheet, Code: code}
	switch code {
	case CodeDuplicateKey:
		r.Column, r.Value = m.KeyColumn(), shorten(row.Sub.ExternalID, maxRejectValue)
		r.Message = "the key is on an earlier row with another e-mail address: one key is one person"
	default:
		for _, o := range m.ops {
			if o.kind == kEmail {
				r.Column = o.column
			}
		}
		r.Value = shorten(row.Sub.Email, maxRejectValue)
		r.Message = "the e-mail address is on an earlier row with another key: two people cannot share an address"
	}
	return r
}
