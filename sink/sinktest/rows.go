package sinktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// rowError is the reason one row (or the request as a whole, index 0) is refused.
type rowError struct {
	row    int
	reason string
}

func (e *rowError) Error() string { return fmt.Sprintf("row %d: %s", e.row, e.reason) }

func rowErrorf(row int, format string, args ...any) *rowError {
	return &rowError{row: row, reason: fmt.Sprintf(format, args...)}
}

// decodeRows decodes a bulkinsert body: a bare JSON array of at most MaxBulkRows objects.
// It returns the rows and, on failure, how many rows the body holds as far as it could tell.
func decodeRows(body []byte) ([]map[string]json.RawMessage, int, *rowError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		return nil, 0, rowErrorf(0, "body must be a JSON array of subscriber objects")
	}
	rows := make([]map[string]json.RawMessage, 0, 64)
	for dec.More() {
		if len(rows) == MaxBulkRows {
			n := len(rows)
			for dec.More() {
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					break
				}
				n++
			}
			return nil, n, rowErrorf(MaxBulkRows, "more than %d rows in one request", MaxBulkRows)
		}
		var m map[string]json.RawMessage
		if err := dec.Decode(&m); err != nil || m == nil {
			if _, ok := err.(*json.UnmarshalTypeError); ok || (err == nil && m == nil) {
				return nil, len(rows) + 1, rowErrorf(len(rows), "not a JSON object")
			}
			return nil, len(rows) + 1, rowErrorf(len(rows), "malformed JSON: %v", err)
		}
		rows = append(rows, m)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return nil, len(rows), rowErrorf(len(rows), "malformed JSON: unterminated array")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, len(rows), rowErrorf(0, "body must be a JSON array of subscriber objects (data after the array)")
	}
	return rows, len(rows), nil
}

// jsonKind of a raw JSON value.
const (
	kindString = 's'
	kindNull   = 'n'
	kindScalar = 'x' // number or boolean
	kindArray  = 'a'
	kindObject = 'o'
)

// scalar returns the text of a raw JSON string, number or boolean and its kind.
func scalar(raw json.RawMessage) (string, byte) {
	if len(raw) == 0 {
		return "", kindNull
	}
	switch raw[0] {
	case '"':
		inner := raw[1 : len(raw)-1]
		if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			return string(inner), kindString
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", kindObject
		}
		return s, kindString
	case 'n':
		return "", kindNull
	case '[':
		return "", kindArray
	case '{':
		return "", kindObject
	}
	return string(raw), kindScalar
}

// stringList decodes a JSON array of strings.
func stringList(raw json.RawMessage) ([]string, bool) {
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, false
	}
	return out, true
}

// validEmail is a strict but simple address check: local@domain.tld, no spaces or controls.
func validEmail(s string) bool {
	if len(s) < 3 || len(s) > 254 {
		return false
	}
	at := strings.IndexByte(s, '@')
	if at < 1 || at > 64 || strings.IndexByte(s[at+1:], '@') >= 0 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	if strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
		return false
	}
	for i := 0; i < len(local); i++ {
		c := local[i]
		if c <= ' ' || c == 0x7f || strings.IndexByte(`"(),:;<>[\]`, c) >= 0 {
			return false
		}
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if c < 0x80 && c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
				return false
			}
		}
	}
	return true
}

const dateLayout = "2006-01-02"

func validDate(s string) bool {
	if len(s) != len(dateLayout) {
		return false
	}
	_, err := time.Parse(dateLayout, s)
	return err == nil
}

// parseRow validates one subscriber object against the store (custom fields) and turns it
// into an upsert. withStatus accepts a "status" key (single create) and returns its code.
func (st *store) parseRow(m map[string]json.RawMessage, withStatus bool) (upsert, uint8, string) {
	var u upsert
	status := stNone
	raw, ok := m["email"]
	if !ok {
		return u, status, "missing email"
	}
	email, kind := scalar(raw)
	email = strings.TrimSpace(email)
	if kind != kindString || !validEmail(email) {
		return u, status, fmt.Sprintf("invalid email %s", quoteRaw(raw))
	}
	u.email, u.key = email, strings.ToLower(email)

	var buf [24]string
	keys := buf[:0]
	for k := range m {
		if k != "email" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	u.fields = make([]fieldKV, 0, len(keys))
	for _, k := range keys {
		raw := m[k]
		if k == "tags" {
			if _, kind := scalar(raw); kind == kindNull {
				continue
			}
			tags, ok := stringList(raw)
			if !ok {
				return u, status, "tags must be an array of strings"
			}
			u.tags, u.hasTags = tags, true
			continue
		}
		if k == "status" && withStatus {
			v, kind := scalar(raw)
			if kind == kindNull {
				continue
			}
			s, ok := parseStatus(v, false)
			if kind != kindString || !ok {
				return u, status, fmt.Sprintf("unknown status %s", quoteRaw(raw))
			}
			status = s
			continue
		}
		if idx, ok := stdFieldIndex[k]; ok {
			v, kind := scalar(raw)
			switch {
			case kind == kindNull || (kind == kindString && v == ""):
				continue
			case kind == kindArray || kind == kindObject:
				return u, status, fmt.Sprintf("%s must be a string", k)
			case idx == fBirthday && !validDate(v):
				return u, status, fmt.Sprintf("invalid birthday %s (want YYYY-MM-DD)", quoteRaw(raw))
			}
			u.fields = append(u.fields, fieldKV{idx: idx, val: v})
			continue
		}
		n, ok := parseSlot(k)
		if !ok {
			return u, status, fmt.Sprintf("unknown field %q", k)
		}
		f := st.slots[n]
		if f == nil {
			return u, status, fmt.Sprintf("unknown custom field %s (no such slot)", k)
		}
		v, reason := f.value(k, raw)
		if reason != "" {
			return u, status, reason
		}
		if v != "" {
			u.fields = append(u.fields, fieldKV{idx: fieldExtraBase + n, val: v})
		}
	}
	slices.SortFunc(u.fields, func(a, b fieldKV) int { return a.idx - b.idx })
	return u, status, ""
}

// value checks a custom field value against the field's datatype and returns its stored form.
func (f *customField) value(slot string, raw json.RawMessage) (string, string) {
	v, kind := scalar(raw)
	if kind == kindNull || (kind == kindString && v == "") {
		return "", ""
	}
	what := fmt.Sprintf("%s (%s field %q)", slot, f.datatype, f.label)
	if kind == kindObject || (kind == kindArray && f.datatype != "multiple_choice") {
		return "", what + " must be a string"
	}
	switch f.datatype {
	case "number":
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Sprintf("%s: %s is not a number", what, quoteRaw(raw))
		}
		return strings.TrimSpace(v), ""
	case "date":
		if !validDate(v) {
			return "", fmt.Sprintf("%s: %s is not a date (want YYYY-MM-DD)", what, quoteRaw(raw))
		}
		return v, ""
	case "single_choice", "dropdown":
		if !slices.Contains(f.choices, v) {
			return "", fmt.Sprintf("%s: %s is not one of the choices", what, quoteRaw(raw))
		}
		return v, ""
	case "multiple_choice":
		var items []string
		if kind == kindArray {
			var ok bool
			if items, ok = stringList(raw); !ok {
				return "", what + " must be a string or an array of strings"
			}
		} else {
			items = strings.Split(v, ",")
		}
		for i, it := range items {
			items[i] = strings.TrimSpace(it)
			if !slices.Contains(f.choices, items[i]) {
				return "", fmt.Sprintf("%s: %q is not one of the choices", what, items[i])
			}
		}
		return strings.Join(items, ","), ""
	}
	return v, ""
}

// quoteRaw shows a raw JSON value in a message, shortened.
func quoteRaw(raw json.RawMessage) string {
	const maxShown = 80
	if len(raw) > maxShown {
		return string(raw[:maxShown]) + "…"
	}
	return string(raw)
}
