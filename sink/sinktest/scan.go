package sinktest

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The bulkinsert body is parsed by a small strict JSON scanner instead of encoding/json:
// rows become members whose values are substrings of the body, so a 1000-row request costs
// little more than one pass over its bytes. FuzzScanObject checks it against encoding/json.

// Kinds of a member's value.
const (
	kindString = 's'
	kindNull   = 'n'
	kindScalar = 'x' // number or boolean: text holds the literal
	kindArray  = 'a'
	kindObject = 'o'
)

// member is one key/value pair of a JSON object.
type member struct {
	key  string
	kind byte
	text string // the value of a string; the literal of a number or boolean
	raw  string // the value's JSON text
}

// maxDepth bounds the nesting of arrays and objects inside a row.
const maxDepth = 32

var errSyntax = errors.New("invalid JSON")

type scanner struct {
	s string
	i int
}

func (p *scanner) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *scanner) peek() byte {
	p.ws()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// atEnd reports whether only spaces are left.
func (p *scanner) atEnd() bool {
	p.ws()
	return p.i == len(p.s)
}

// object appends the members of the object at p.i to dst.
func (p *scanner) object(dst []member) ([]member, error) {
	if p.peek() != '{' {
		return dst, errSyntax
	}
	p.i++
	if p.peek() == '}' {
		p.i++
		return dst, nil
	}
	for {
		if p.peek() != '"' {
			return dst, errSyntax
		}
		key, err := p.str()
		if err != nil {
			return dst, err
		}
		if p.peek() != ':' {
			return dst, errSyntax
		}
		p.i++
		m := member{key: key}
		if err := p.value(&m, 0); err != nil {
			return dst, err
		}
		dst = append(dst, m)
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return dst, nil
		default:
			return dst, errSyntax
		}
	}
}

// value scans one value into m (kind, text, raw).
func (p *scanner) value(m *member, depth int) error {
	c := p.peek()
	start := p.i
	var err error
	switch {
	case c == '"':
		m.kind = kindString
		m.text, err = p.str()
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return errSyntax
		}
		m.kind = kindObject
		if c == '[' {
			m.kind = kindArray
		}
		err = p.composite(c, depth+1)
	case c == 'n':
		m.kind, err = kindNull, p.literal("null")
	case c == 't':
		m.kind, err = kindScalar, p.literal("true")
	case c == 'f':
		m.kind, err = kindScalar, p.literal("false")
	case c == '-' || (c >= '0' && c <= '9'):
		m.kind, err = kindScalar, p.number()
	default:
		return errSyntax
	}
	m.raw = p.s[start:p.i]
	if m.kind == kindScalar {
		m.text = m.raw
	}
	return err
}

// composite checks the array or object opening at p.i.
func (p *scanner) composite(open byte, depth int) error {
	p.i++
	closer := byte(']')
	if open == '{' {
		closer = '}'
	}
	if p.peek() == closer {
		p.i++
		return nil
	}
	var m member
	for {
		if open == '{' {
			if p.peek() != '"' {
				return errSyntax
			}
			if _, err := p.str(); err != nil {
				return err
			}
			if p.peek() != ':' {
				return errSyntax
			}
			p.i++
		}
		if err := p.value(&m, depth); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case closer:
			p.i++
			return nil
		default:
			return errSyntax
		}
	}
}

func (p *scanner) literal(lit string) error {
	if !strings.HasPrefix(p.s[p.i:], lit) {
		return errSyntax
	}
	p.i += len(lit)
	return nil
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *scanner) number() error {
	s, i := p.s, p.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return errSyntax
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return errSyntax
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return errSyntax
		}
	}
	p.i = i
	return nil
}

// str scans the string at p.i and returns its value. Without escapes the value is a
// substring of the input. Invalid UTF-8 becomes U+FFFD, byte by byte, as encoding/json does.
func (p *scanner) str() (string, error) {
	p.i++
	start := p.i
	ascii := true
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			v := p.s[start:p.i]
			p.i++
			if !ascii && !utf8.ValidString(v) {
				return fixUTF8(v), nil
			}
			return v, nil
		case c == '\\':
			return p.strEscaped(start)
		case c < 0x20:
			return "", errSyntax
		case c >= utf8.RuneSelf:
			ascii = false
		}
		p.i++
	}
	return "", errSyntax
}

func fixUTF8(s string) string {
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, unicode.ReplacementChar)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// strEscaped finishes a string that holds escapes; p.i is at the first backslash.
func (p *scanner) strEscaped(start int) (string, error) {
	b := make([]byte, 0, p.i-start+16)
	b = append(b, p.s[start:p.i]...)
	s := p.s
	for p.i < len(s) {
		c := s[p.i]
		switch {
		case c == '"':
			p.i++
			return fixUTF8(string(b)), nil
		case c < 0x20:
			return "", errSyntax
		case c != '\\':
			b = append(b, c)
			p.i++
			continue
		}
		if p.i+1 >= len(s) {
			return "", errSyntax
		}
		e := s[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(s, p.i)
			if !ok {
				return "", errSyntax
			}
			p.i += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(s, p.i+2); ok && strings.HasPrefix(s[p.i:], `\u`) {
					if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
						p.i += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
				}
				r = unicode.ReplacementChar
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", errSyntax
		}
	}
	return "", errSyntax
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}
