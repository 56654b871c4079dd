package sink

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Standard subscriber field names, as the service spells them in JSON.
const (
	FieldEmail     = "email"
	FieldFirstname = "firstname"
	FieldLastname  = "lastname"
	FieldAddress   = "address"
	FieldZip       = "zip"
	FieldCity      = "city"
	FieldPhone     = "phone"
	FieldCompany   = "company"
	FieldBirthday  = "birthday"
	FieldGender    = "gender"
	// FieldExternalID is the subscriber's id in another system (a CRM's), which public
	// clients send on create and bulkinsert.
	FieldExternalID = "external_id"
)

// Consent fields of the service. They are sent and returned under these exact names.
const (
	ConsentEmail        = "SAMTYKKEEPOST"
	ConsentSMS          = "SAMTYKKESMS"
	ConsentEmailAndSMS  = "SAMTYKKEEPOSTOGSMS"
	ConsentPrivacyTerms = "PERSONVERNERKLRING"
)

// ConsentFields lists the consent fields in the order the service documents them.
var ConsentFields = []string{ConsentEmail, ConsentSMS, ConsentEmailAndSMS, ConsentPrivacyTerms}

// Subscriber statuses, as the service names them: the one declaration (the suppression list
// in state holds StatusUnsubscribed and StatusBounce). An unsubscribe and a bounce are
// distinct everywhere.
const (
	StatusActive       = "active"
	StatusUnsubscribed = "unsubscribed"
	StatusBounce       = "bounce"
	// StatusReactivate is accepted by bulkinsert's status query only. subsync never sends it
	// unless a person asked for it explicitly.
	StatusReactivate = "reactivate"
)

// Subscriber is one row of a bulkinsert, or the body of a single create/update.
//
// Empty strings are omitted from the JSON, so a payload never clears a value the service
// already holds. Fields carries the consent fields (SAMTYKKEEPOST, …) and custom-field slots
// (EXTRA<n>) by their service name, each name at most once (SetField keeps it so).
type Subscriber struct {
	Email     string
	Firstname string
	Lastname  string
	Address   string
	Zip       string
	City      string
	Phone     string
	Company   string
	Birthday  string // YYYY-MM-DD
	Gender    string
	// ExternalID is the subscriber's id in the source (a CRM id); "" = not sent.
	ExternalID string
	Fields     []Field
	Tags       []string
}

// Field is one consent field or custom-field slot of a Subscriber, by its service name.
//
// A slice rather than a map: a payload has a handful of them, and a map per row was the
// largest cost of mapping a million rows.
type Field struct {
	Name, Value string
}

// Field returns the value of the consent field or slot name, or "" when s has none.
func (s *Subscriber) Field(name string) string {
	for _, f := range s.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// SetField sets the consent field or slot name to value, replacing its value if s has it.
// A field it adds goes in name order when Fields are in name order.
func (s *Subscriber) SetField(name, value string) {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			s.Fields[i].Value = value
			return
		}
	}
	at := len(s.Fields)
	if fieldsSorted(s.Fields) {
		at, _ = slices.BinarySearchFunc(s.Fields, Field{Name: name}, compareFields)
	}
	s.Fields = slices.Insert(s.Fields, at, Field{name, value})
}

// SortedFields returns Fields in name order: Fields itself when they are (mapping builds
// them so), else a sorted copy. JSON encoding and delta fingerprints use this order, so equal
// payloads encode alike however they were built.
func (s *Subscriber) SortedFields() []Field {
	if fieldsSorted(s.Fields) {
		return s.Fields
	}
	c := slices.Clone(s.Fields)
	slices.SortStableFunc(c, compareFields)
	return c
}

func compareFields(a, b Field) int { return strings.Compare(a.Name, b.Name) }

// fieldsSorted reports whether f is in name order (slices.IsSortedFunc with compareFields,
// without a call for every pair).
func fieldsSorted(f []Field) bool {
	for i := 1; i < len(f); i++ {
		if f[i].Name < f[i-1].Name {
			return false
		}
	}
	return true
}

// MarshalJSON encodes the subscriber as the service expects it. The output is deterministic
// (custom fields sorted by name), so it doubles as the input of a delta fingerprint.
func (s Subscriber) MarshalJSON() ([]byte, error) {
	return s.AppendJSON(make([]byte, 0, 256)), nil
}

// AppendJSON appends the JSON object of s to dst and returns the extended buffer.
// It allocates nothing beyond growing dst (and a sorted copy of Fields when they are not in
// name order, which mapping never produces).
func (s *Subscriber) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	first := true
	// key is the field's name as a JSON string with its colon and the value's opening quote,
	// after a comma that the first field goes without: `,"email":"`.
	field := func(key, v string) {
		if v == "" {
			return
		}
		if first {
			key, first = key[1:], false
		}
		dst = append(dst, key...)
		dst = appendStringBody(dst, v)
	}
	field(`,"`+FieldEmail+`":"`, s.Email)
	field(`,"`+FieldFirstname+`":"`, s.Firstname)
	field(`,"`+FieldLastname+`":"`, s.Lastname)
	field(`,"`+FieldAddress+`":"`, s.Address)
	field(`,"`+FieldZip+`":"`, s.Zip)
	field(`,"`+FieldCity+`":"`, s.City)
	field(`,"`+FieldPhone+`":"`, s.Phone)
	field(`,"`+FieldCompany+`":"`, s.Company)
	field(`,"`+FieldBirthday+`":"`, s.Birthday)
	field(`,"`+FieldGender+`":"`, s.Gender)
	field(`,"`+FieldExternalID+`":"`, s.ExternalID)
	custom := func(name, v string) {
		if v == "" {
			return
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, name)
		dst = append(dst, ':', '"')
		dst = appendStringBody(dst, v)
	}
	for _, f := range s.SortedFields() {
		custom(f.Name, f.Value)
	}
	if len(s.Tags) > 0 {
		if !first {
			dst = append(dst, ',')
		}
		dst = append(dst, `"tags":[`...)
		for i, t := range s.Tags {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, t)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// jsonSafe[b] is true for the bytes a JSON string holds as they are: ASCII from 0x20 up, but
// the quote and the backslash.
var jsonSafe = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// plainPrefix returns where, from i on, the first byte of s is that a JSON string cannot
// hold as it is, or len(s). Most values have none, and are then copied whole.
//
// A string of eight bytes or more is checked eight bytes at a time, with bit tricks on one
// 64-bit word (see unplain); its last bytes as the word that ends it, which overlaps bytes
// already checked. A two-byte rune (å, ø …) is stepped over and the word-wise check goes on
// after it. A string of four to seven bytes is checked as two words of four, overlapping; a
// shorter one, or one of those two words find something in, goes byte by byte.
func plainPrefix(s string, i int) int {
	if len(s) < 8 {
		if i == 0 && len(s) >= 4 {
			// Two words of four bytes, overlapping when s is shorter than eight.
			x := word4(s, 0) | word4(s, len(s)-4)<<32
			if unplain(x) == 0 {
				return len(s)
			}
		}
		for i < len(s) {
			switch c := s[i]; {
			case jsonSafe[c]:
				i++
			case twoByteRune(s, i):
				i += 2
			default:
				return i
			}
		}
		return i
	}
	for i < len(s) {
		j := min(i, len(s)-8) // the word from i, or the one that ends s
		x := word(s, j)
		if j < i {
			// The bytes of the word before i were checked already; they may be part of a
			// two-byte rune, or have been escaped, and would be flagged or borrow from the
			// bytes after them: check them as plain letters instead.
			low := uint64(1)<<(uint(i-j)*8) - 1
			x = x&^low | 0x6161616161616161&low
		}
		m := unplain(x)
		if m == 0 {
			i = j + 8
			continue
		}
		i = j + bits.TrailingZeros64(m)/8
		if !twoByteRune(s, i) {
			return i
		}
		i += 2
	}
	return i
}

// twoByteRune reports whether a valid two-byte rune (U+0080..U+07FF: å, ø …) starts at s[i].
func twoByteRune(s string, i int) bool {
	return 0xC2 <= s[i] && s[i] <= 0xDF && i+1 < len(s) && s[i+1]&0xC0 == 0x80
}

// word returns the eight bytes of s from i on as a little-endian word: s[i] is its lowest
// byte.
func word(s string, i int) uint64 {
	w := s[i : i+8]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// word4 returns the four bytes of s from i on as a little-endian word.
func word4(s string, i int) uint64 {
	w := s[i : i+4]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24
}

// unplain returns the top bit of every byte of x that is not plain ASCII for a JSON string
// (0x80 and up, below 0x20, the quote, the backslash), or 0 when there is none. Of the
// bits set, the lowest is exact: a byte below 0x20 borrows in x-0x20… and sets its own top
// bit, and x^q has a zero byte where x has q, which borrows alike; a borrow only reaches
// higher bytes, so it may set the bits of bytes after the first flagged one, never before.
func unplain(x uint64) uint64 {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return (x | (x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs) & tops
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendString(dst []byte, s string) []byte {
	return appendStringBody(append(dst, '"'), s)
}

// appendStringBody appends s as the inside of a JSON string, and its closing quote.
func appendStringBody(dst []byte, s string) []byte {
	start := 0
	for i := plainPrefix(s, 0); i < len(s); i = plainPrefix(s, i) {
		b := s[i]
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\u202`...)
			dst = strconv.AppendInt(dst, int64(r&0xF), 16)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
