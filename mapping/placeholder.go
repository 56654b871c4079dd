package mapping

import (
	"strings"
	"unicode/utf8"

	"github.com/subsync/subsync/sink"
)

// Placeholders are the values exports write for "nothing": read as an empty cell in every
// column but the consent, status and external_id columns (where a value that says nothing
// is still a value a person has to look at). An e-mail column holding one has no address
// (missing_email). They are compared after cleaning, ignoring case. The list, with where
// each was seen, is in docs/mapping.md.
var Placeholders = []string{
	"Unspecified", "Not specified", "Unknown", "N/A", "#N/A", "(none)", "(blank)", "(empty)",
	"NULL", "-", "--", "?", "Ukjent", "Ikke oppgitt", "Ikke angitt", "Uspesifisert",
}

// placeholdersByLen is Placeholders folded to lower case, by length (all are ASCII).
var placeholdersByLen = func() (m [25][]string) {
	for _, p := range Placeholders {
		low := strings.ToLower(p)
		m[len(low)] = append(m[len(low)], low)
	}
	return m
}()

// isPlaceholder reports whether a cleaned value is one exports write for "nothing": one of
// Placeholders, or a date or date-time whose digits are all zeros ("0.0.00", "0/0/00",
// "00.00.0000", "0000-00-00 00:00:00", as Outlook and MySQL write an empty date), or .NET's
// DateTime.MinValue, 1 January of the year 1 ("1/1/0001", "01.01.0001", "0001-01-01").
//
// It runs on every value of every row, so it allocates nothing: the value is lower-cased on
// the stack and compared with the placeholders of its length. Of the letters beyond ASCII
// only two lower-case into it (İ to i, the Kelvin sign to k); a value with any other cannot
// be one.
func isPlaceholder(v string) bool {
	if len(v) == 0 || len(v) > 24 {
		return false
	}
	if c := v[0]; c >= '0' && c <= '9' {
		return zeroDate(v)
	}
	var low [24]byte
	n := 0
	for i := 0; i < len(v); {
		c := v[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(v[i:])
			switch r {
			case '\u0130':
				c = 'i'
			case '\u212a':
				c = 'k'
			default:
				return false
			}
			i += size
		} else {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			i++
		}
		low[n] = c
		n++
	}
	for _, p := range placeholdersByLen[n] {
		if p == string(low[:n]) {
			return true
		}
	}
	return false
}

// zeroDate reports whether v is made of digits and date/time separators only, with three
// groups of digits at least, and is either all zeros or day 1 of month 1 of the year 1.
// v has at most 24 bytes, so at most 12 groups.
func zeroDate(v string) bool {
	var groups [12]string
	n, start := 0, -1
	for i := 0; i <= len(v); i++ {
		if i < len(v) && v[i] >= '0' && v[i] <= '9' {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			groups[n] = v[start:i]
			n++
			start = -1
		}
		if i < len(v) && !dateSeparator(v[i]) {
			return false
		}
	}
	if n < 3 {
		return false
	}
	zero := true
	for _, g := range groups[:n] {
		if strings.Trim(g, "0") != "" {
			zero = false
		}
	}
	if zero {
		return true
	}
	// DateTime.MinValue: 0001-01-01, 1/1/0001, 01.01.0001, and a midnight after it.
	y, m, d := groups[0], groups[1], groups[2]
	if len(groups[0]) <= 2 {
		y, m, d = groups[2], groups[1], groups[0]
	}
	if len(y) != 4 || strings.TrimLeft(y, "0") != "1" || strings.TrimLeft(m, "0") != "1" || strings.TrimLeft(d, "0") != "1" {
		return false
	}
	for _, g := range groups[3:n] {
		if strings.Trim(g, "0") != "" {
			return false
		}
	}
	return true
}

// dateSeparator reports whether c may stand between the digits of a date or time.
func dateSeparator(c byte) bool {
	switch c {
	case '.', '/', '-', ':', ' ', 'T':
		return true
	}
	return false
}

// placeholderEmpty reports whether a placeholder in o's column reads as empty: in every
// column but the consent, status and external_id (a key) columns.
func (o *op) placeholderEmpty() bool {
	switch o.kind {
	case kConsent, kStatus, kStatusMobile:
		return false
	}
	return o.name != sink.FieldExternalID
}
