package mapping

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/subsync/subsync/sources"
)

// TargetEmailFallback is the target a plan (Mapper.Plan) gives a fallback column of the
// e-mail column (Column.Fallback); a mapping names them with fallback = [ … ].
const TargetEmailFallback = "email_fallback"

// emailSeparators split a cell that holds several addresses: Google Contacts writes
// "a@x.no ::: b@y.no", people and other programs a semicolon or a comma.
var emailSeparators = strings.NewReplacer(":::", "\x00", ";", "\x00", ",", "\x00")

// fallbacks gives the e-mail op o the fallback columns of c (key is c's TOML key), claiming
// each in mappedBy; a missing or already mapped one is a problem of e.
func (m *Mapper) fallbacks(e *SpecError, o *op, c Column, key string, mappedBy map[int]string) {
	for _, name := range c.Fallback {
		idx, msg := findColumn(m.header, name)
		switch {
		case msg != "":
			e.add(key+".fallback", "%s", msg)
			continue
		case mappedBy[idx] != "":
			e.add(key+".fallback", "column %q is already mapped by %s", m.header[idx], mappedBy[idx])
			continue
		}
		mappedBy[idx] = key + ".fallback"
		m.plan[idx].Target, m.plan[idx].Note = TargetEmailFallback, "used when "+strconv.Quote(o.column)+" has no valid address"
		o.alts, o.altNames = append(o.alts, idx), append(o.altNames, m.header[idx])
	}
}

// applyEmail maps the e-mail of a row that is not a plain address as it stands: the first
// valid address of the e-mail cell, or of the fallback columns in order, is sent. A cell
// holding several addresses ("a@x.no ::: b@y.no") gives its first valid one, with a warning
// (CodeMultipleEmails); an invalid address passed over for a fallback's is a warning too
// (CodeInvalidEmail). With no valid address anywhere the row is rejected: for the first
// invalid one, or as missing_email when every cell is empty.
func (m *Mapper) applyEmail(a *Arena, row *Row, o *op, rec *sources.Record, raw string) (*Reject, []Reject) {
	var first *Reject
	var warns []Reject
	for k := 0; k <= len(o.alts); k++ {
		cell, col := raw, o.column
		if k > 0 {
			cell, col = "", o.altNames[k-1]
			if i := o.alts[k-1]; i < len(rec.Values) {
				cell = rec.Values[i]
			}
		}
		email, n, code, msg := cellEmail(a, cell)
		if email != "" {
			row.Sub.Email = email
			if first != nil {
				first.Message += "; the address in " + strconv.Quote(col) + " was sent instead"
				warns = append(warns, *first)
			}
			if n > 1 {
				warns = append(warns, *m.rejectAt(rec, col, cell, CodeMultipleEmails,
					fmt.Sprintf("the cell holds %d addresses: the first valid one, %s, was sent", n, email)))
			}
			return nil, warns
		}
		if code != "" && first == nil {
			first = m.rejectAt(rec, col, cell, code, msg)
		}
	}
	if first != nil {
		return first, nil
	}
	msg := "the row has no e-mail address"
	if len(o.alts) > 0 {
		msg += " (in " + strings.Join(quoteAll(append([]string{o.column}, o.altNames...)), " or ") + ")"
	}
	return m.rejectAt(rec, o.column, raw, CodeMissingEmail, msg), nil
}

// cellEmail reads an e-mail cell: its first valid address, and how many values it holds
// (several separated by ":::", ";" or ","); or, when none is valid, the code and message of
// its problem ("" for an empty cell or a placeholder).
func cellEmail(a *Arena, cell string) (email string, n int, code, msg string) {
	v, ok := cleanIn(a, cell)
	switch {
	case !ok:
		return "", 0, CodeInvalidEncoding, "the e-mail address is not valid UTF-8: the file's character encoding is probably not what subsync read it as"
	case v == "" || isPlaceholder(v):
		return "", 0, "", ""
	case !strings.ContainsAny(v, ":;,"):
		e, problem := normEmail(a, v)
		if problem != "" {
			return "", 1, CodeInvalidEmail, "the e-mail address " + problem
		}
		return e, 1, "", ""
	}
	for part := range strings.SplitSeq(emailSeparators.Replace(v), "\x00") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n++
		if email != "" {
			continue
		}
		if e, problem := normEmail(a, part); problem == "" {
			email = e
		} else if code == "" {
			code, msg = CodeInvalidEmail, "the e-mail cell holds no valid address ("+strconv.Quote(part)+": "+problem+")"
		}
	}
	if email != "" {
		return email, n, "", ""
	}
	return "", n, code, msg
}

// rejectAt is reject for the column col.
func (m *Mapper) rejectAt(rec *sources.Record, col, raw, code, msg string) *Reject {
	return &Reject{Ordinal: rec.Ordinal, Line: rec.Line, Sheet: rec.Sheet, Column: col,
		Value: shorten(raw, maxRejectValue), Code: code, Message: msg}
}
