package sinktest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
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

// stringList decodes a JSON array of strings.
func stringList(raw string) ([]string, bool) {
	var out []string
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
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
	if strings.IndexByte(domain, '.') < 0 {
		return false
	}
	for l := range strings.SplitSeq(domain, ".") {
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
// into an upsert, in document order (of duplicate keys the last wins). withStatus accepts a
// "status" key (single create) and returns its code. Values of u are substrings of the body.
func (d *fieldDefs) parseRow(ms []member, withStatus bool, fields []fieldKV) (upsert, uint8, string) {
	var u upsert
	status := stNone
	emailAt := -1
	for i := range ms {
		if ms[i].key == "email" {
			emailAt = i
		}
	}
	if emailAt < 0 {
		return u, status, "missing email"
	}
	email := strings.TrimSpace(ms[emailAt].text)
	if ms[emailAt].kind != kindString || !validEmail(email) {
		return u, status, fmt.Sprintf("invalid email %s", quoteRaw(ms[emailAt].raw))
	}
	u.email, u.key = email, strings.ToLower(email)
	u.fields = fields
	for i := range ms {
		m := &ms[i]
		switch k := m.key; {
		case k == "email":
		case k == "tags":
			if m.kind == kindNull {
				continue
			}
			tags, ok := stringList(m.raw)
			if m.kind != kindArray || !ok {
				return u, status, "tags must be an array of strings"
			}
			u.tags, u.hasTags = tags, true
		case k == "status" && withStatus:
			if m.kind == kindNull {
				continue
			}
			s, ok := parseStatus(m.text, false)
			if m.kind != kindString || !ok {
				return u, status, fmt.Sprintf("unknown status %s", quoteRaw(m.raw))
			}
			status = s
		default:
			if idx, ok := stdField(k); ok {
				switch {
				case m.kind == kindNull || (m.kind == kindString && m.text == ""):
					continue
				case m.kind == kindArray || m.kind == kindObject:
					return u, status, fmt.Sprintf("%s must be a string", k)
				case idx == fBirthday && !validDate(m.text):
					return u, status, fmt.Sprintf("invalid birthday %s (want YYYY-MM-DD)", quoteRaw(m.raw))
				case idx >= fConsentEmail && idx <= fConsentPrivacy && d.rules.consentBooleans &&
					(m.kind != kindScalar || (m.text != "true" && m.text != "false")):
					return u, status, fmt.Sprintf("%s must be true or false, not %s", k, quoteRaw(m.raw))
				case idx == fGender && d.rules.genders != nil && !slices.Contains(d.rules.genders, m.text):
					return u, status, fmt.Sprintf("gender %s is not one of %s", quoteRaw(m.raw), strings.Join(d.rules.genders, ", "))
				}
				u.fields = append(u.fields, fieldKV{idx: idx, val: m.text})
				continue
			}
			n, ok := parseSlot(k)
			if !ok {
				return u, status, fmt.Sprintf("unknown field %q", k)
			}
			f := d.slots[n]
			if f == nil {
				return u, status, fmt.Sprintf("unknown custom field %s (no such slot)", k)
			}
			v, reason := f.value(k, m, d.rules.multipleArrays)
			if reason != "" {
				return u, status, reason
			}
			if v != "" {
				u.fields = append(u.fields, fieldKV{idx: fieldExtraBase + n, val: v})
			}
		}
	}
	u.fields = sortFields(u.fields)
	return u, status, ""
}

// sortFields sorts kvs by index, stably, and keeps the last of equal indexes.
func sortFields(kvs []fieldKV) []fieldKV {
	for i := 1; i < len(kvs); i++ { // insertion sort: rows hold a dozen fields, mostly in order
		for j := i; j > 0 && kvs[j].idx < kvs[j-1].idx; j-- {
			kvs[j], kvs[j-1] = kvs[j-1], kvs[j]
		}
	}
	out := kvs[:0]
	for i, kv := range kvs {
		if i+1 < len(kvs) && kvs[i+1].idx == kv.idx {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// value checks a custom field value against the field's datatype and returns its stored form.
// arrays: a multiple_choice value must be an array (WithMultipleChoiceArrays).
func (f *customField) value(slot string, m *member, arrays bool) (string, string) {
	v, kind, raw := m.text, m.kind, m.raw
	if kind == kindNull || (kind == kindString && v == "") {
		return "", ""
	}
	what := func() string { return fmt.Sprintf("%s (%s field %q)", slot, f.datatype, f.label) }
	if kind == kindObject || (kind == kindArray && f.datatype != "multiple_choice") {
		return "", what() + " must be a string"
	}
	switch f.datatype {
	case "number":
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Sprintf("%s: %s is not a number", what(), quoteRaw(raw))
		}
		return strings.TrimSpace(v), ""
	case "date":
		if !validDate(v) {
			return "", fmt.Sprintf("%s: %s is not a date (want YYYY-MM-DD)", what(), quoteRaw(raw))
		}
		return v, ""
	case "single_choice", "dropdown":
		if !slices.Contains(f.choices, v) {
			return "", fmt.Sprintf("%s: %s is not one of the choices", what(), quoteRaw(raw))
		}
		return v, ""
	case "multiple_choice":
		var items []string
		if kind == kindArray {
			var ok bool
			if items, ok = stringList(raw); !ok {
				return "", what() + " must be a string or an array of strings"
			}
		} else if arrays {
			return "", fmt.Sprintf("%s must be an array of strings, not %s", what(), quoteRaw(raw))
		} else {
			items = strings.Split(v, ",")
		}
		for i, it := range items {
			items[i] = strings.TrimSpace(it)
			if !slices.Contains(f.choices, items[i]) {
				return "", fmt.Sprintf("%s: %q is not one of the choices", what(), items[i])
			}
		}
		return strings.Join(items, ","), ""
	}
	return v, ""
}

// quoteRaw shows a raw JSON value in a message, shortened.
func quoteRaw(raw string) string {
	const maxShown = 80
	if len(raw) > maxShown {
		return strings.ToValidUTF8(raw[:maxShown], "") + "…"
	}
	return raw
}
