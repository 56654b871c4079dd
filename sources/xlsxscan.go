package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// The worksheet and shared-string parts are read by a purpose-built scanner rather than
// encoding/xml: a worksheet of a million rows is a few hundred megabytes of XML, and
// encoding/xml's Token API allocates for every element, attribute and piece of text. The
// scanner looks for '<', reads a tag's name and the attributes it needs, and takes a whole
// <c> (or <si>) element at once, so a cell's value is decoded straight out of the read
// buffer. It understands what the parts hold: elements with or without a namespace prefix,
// the five predefined entities and character references, CDATA sections, comments and
// processing instructions, and XML's line-end normalisation. Anything it does not need is
// skipped tag by tag.

// scanBuf is the read buffer's starting size; it grows to hold one element (a cell, a
// shared string) of at most the scanner's limit.
const scanBuf = 64 << 10

// errElementTooLarge is recorded by the scanner when one element does not fit its limit.
var errElementTooLarge = errors.New("element too large")

// xmlScanner is a forward-only window on an XML stream. Offsets it returns are relative to
// pos, the first unread byte, so they survive the buffer being compacted or grown.
type xmlScanner struct {
	r     io.Reader
	buf   []byte
	pos   int
	end   int
	eof   bool
	err   error // the first read error, or errElementTooLarge
	limit int   // the largest element, in bytes
}

func newXMLScanner(r io.Reader, limit int) *xmlScanner {
	return &xmlScanner{r: r, buf: make([]byte, min(scanBuf, limit+4096)), limit: limit}
}

// more reads more data, making room by compacting the buffer or growing it up to the
// limit. It returns false when nothing more can be read.
func (x *xmlScanner) more() bool {
	if x.eof || x.err != nil {
		return false
	}
	if x.pos > 0 && (x.end == len(x.buf) || x.pos >= len(x.buf)/2) {
		copy(x.buf, x.buf[x.pos:x.end])
		x.end -= x.pos
		x.pos = 0
	}
	if x.end == len(x.buf) {
		if len(x.buf) >= x.limit+4096 {
			x.err = errElementTooLarge
			return false
		}
		nb := make([]byte, min(2*len(x.buf), x.limit+4096))
		copy(nb, x.buf[:x.end])
		x.buf = nb
	}
	n, err := x.r.Read(x.buf[x.end:])
	x.end += n
	switch {
	case err == io.EOF:
		x.eof = true
	case err != nil:
		x.err = err
	}
	return n > 0 || (!x.eof && x.err == nil)
}

// skipTo moves pos to the next '<'; false at the end of the stream.
func (x *xmlScanner) skipTo() bool {
	for {
		if i := bytes.IndexByte(x.buf[x.pos:x.end], '<'); i >= 0 {
			x.pos += i
			return true
		}
		x.pos = x.end
		if !x.more() {
			return false
		}
	}
}

// index finds pat at or after the relative offset from; -1 when the stream ends first.
func (x *xmlScanner) index(from int, pat []byte) int {
	for {
		if i := bytes.Index(x.buf[x.pos+from:x.end], pat); i >= 0 {
			return from + i
		}
		from = max(from, x.end-x.pos-len(pat)+1)
		if !x.more() {
			return -1
		}
	}
}

// tagEnd returns the relative offset of the '>' that closes the tag at pos, skipping
// quoted attribute values; -1 when the stream ends first.
func (x *xmlScanner) tagEnd() int {
	var quote byte
	for i := 1; ; i++ {
		for x.pos+i >= x.end {
			if !x.more() {
				return -1
			}
		}
		switch c := x.buf[x.pos+i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return i
		}
	}
}

var (
	commentEnd = []byte("-->")
	piEnd      = []byte("?>")
	cdataStart = []byte("<![CDATA[")
	cdataEnd   = []byte("]]>")
)

// tag describes the tag at pos: its name without a prefix, the name as written, whether
// it closes or is self-closing, and its length. skip is true for comments, processing
// instructions and declarations (already consumed). ok is false at the end of the stream.
type tag struct {
	local, qname []byte
	closing      bool
	empty        bool
	n            int // bytes up to and including '>'
}

// readTag reads the tag at pos (which is at '<'). Comments, processing instructions and
// declarations are consumed and reported with skip.
func (x *xmlScanner) readTag() (t tag, skip, ok bool) {
	for x.end-x.pos < 4 {
		if !x.more() {
			break
		}
	}
	b := x.buf[x.pos:x.end]
	switch {
	case bytes.HasPrefix(b, []byte("<!--")):
		i := x.index(4, commentEnd)
		if i < 0 {
			return t, false, false
		}
		x.pos += i + len(commentEnd)
		return t, true, true
	case bytes.HasPrefix(b, []byte("<?")):
		i := x.index(2, piEnd)
		if i < 0 {
			return t, false, false
		}
		x.pos += i + len(piEnd)
		return t, true, true
	case bytes.HasPrefix(b, []byte("<!")):
		if bytes.HasPrefix(b, cdataStart) {
			i := x.index(len(cdataStart), cdataEnd)
			if i < 0 {
				return t, false, false
			}
			x.pos += i + len(cdataEnd)
			return t, true, true
		}
		i := x.tagEnd()
		if i < 0 {
			return t, false, false
		}
		x.pos += i + 1
		return t, true, true
	}
	e := x.tagEnd()
	if e < 0 {
		return t, false, false
	}
	return parseTag(x.buf[x.pos : x.pos+e+1]), false, true
}

// parseTag reads the name of the tag b ("<...>").
func parseTag(b []byte) tag {
	t := tag{n: len(b)}
	i := 1
	if len(b) > 1 && b[1] == '/' {
		t.closing = true
		i = 2
	}
	j := i
	for j < len(b) && !isXMLSpace(b[j]) && b[j] != '/' && b[j] != '>' {
		j++
	}
	t.qname = b[i:j]
	t.local = t.qname
	if k := bytes.IndexByte(t.qname, ':'); k >= 0 {
		t.local = t.qname[k+1:]
	}
	t.empty = !t.closing && len(b) >= 2 && b[len(b)-2] == '/'
	return t
}

func isXMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// attr returns the raw value of the attribute name (unprefixed) in the tag b.
func attr(b []byte, name string) ([]byte, bool) {
	i := 1
	for i < len(b) && !isXMLSpace(b[i]) && b[i] != '>' && b[i] != '/' {
		i++ // the element's name
	}
	for i < len(b) {
		for i < len(b) && (isXMLSpace(b[i]) || b[i] == '/') {
			i++
		}
		start := i
		for i < len(b) && b[i] != '=' && !isXMLSpace(b[i]) && b[i] != '>' {
			i++
		}
		key := b[start:i]
		for i < len(b) && (isXMLSpace(b[i]) || b[i] == '=') {
			i++
		}
		if i >= len(b) || (b[i] != '"' && b[i] != '\'') {
			return nil, false
		}
		q := b[i]
		end := bytes.IndexByte(b[i+1:], q)
		if end < 0 {
			return nil, false
		}
		val := b[i+1 : i+1+end]
		i += end + 2
		if string(key) == name {
			return val, true
		}
	}
	return nil, false
}

// appendText appends the character data raw to dst as encoding/xml reads it: entities and
// character references replaced, "\r\n" and a lone "\r" read as "\n".
func appendText(dst, raw []byte) ([]byte, error) {
	for len(raw) > 0 {
		i := bytes.IndexAny(raw, "&\r")
		if i < 0 {
			return append(dst, raw...), nil
		}
		dst = append(dst, raw[:i]...)
		raw = raw[i:]
		if raw[0] == '\r' {
			dst = append(dst, '\n')
			raw = raw[1:]
			if len(raw) > 0 && raw[0] == '\n' {
				raw = raw[1:]
			}
			continue
		}
		semi := bytes.IndexByte(raw, ';')
		if semi < 0 {
			return dst, errors.New("unterminated entity")
		}
		name := raw[1:semi]
		raw = raw[semi+1:]
		switch string(name) {
		case "lt":
			dst = append(dst, '<')
		case "gt":
			dst = append(dst, '>')
		case "amp":
			dst = append(dst, '&')
		case "quot":
			dst = append(dst, '"')
		case "apos":
			dst = append(dst, '\'')
		default:
			if len(name) < 2 || name[0] != '#' {
				return dst, fmt.Errorf("unknown entity &%s;", name)
			}
			var n uint64
			var err error
			if name[1] == 'x' {
				n, err = strconv.ParseUint(string(name[2:]), 16, 32)
			} else {
				n, err = strconv.ParseUint(string(name[1:]), 10, 32)
			}
			if err != nil || !isXMLChar(rune(n)) {
				return dst, fmt.Errorf("invalid character entity &%s;", name)
			}
			dst = utf8.AppendRune(dst, rune(n))
		}
	}
	return dst, nil
}

// isXMLChar reports whether r may appear in XML 1.0 text (as encoding/xml checks it).
func isXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// bstrUnmarshal undoes OOXML's escapes of characters XML cannot hold (_x0008_ is U+0008,
// _x005F_ an underscore), exactly as excelize does: every _xHHHH_ is replaced by its
// character, or removed when it is not a valid one (a lone surrogate).
func appendBstr(dst, s []byte) []byte {
	for {
		i := bytes.Index(s, []byte("_x"))
		if i < 0 || len(s)-i < 7 {
			return append(dst, s...)
		}
		if s[i+6] != '_' || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
			dst = append(dst, s[:i+1]...)
			s = s[i+1:]
			continue
		}
		dst = append(dst, s[:i]...)
		r, _ := strconv.ParseUint(string(s[i+2:i+6]), 16, 32)
		if utf8.ValidRune(rune(r)) {
			dst = utf8.AppendRune(dst, rune(r))
		}
		s = s[i+7:]
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// elementText walks the content of an element (the bytes between its start and end tags)
// and calls text with the decoded character data of each child element whose path from
// the element (local names, prefixes dropped) is wanted by want.
func elementText(content []byte, want func(path []string) int, text func(dst int, data []byte) error) error {
	var path []string
	var scratch []byte
	for len(content) > 0 {
		i := bytes.IndexByte(content, '<')
		if i < 0 {
			i = len(content)
		}
		if i > 0 && len(path) > 0 {
			if d := want(path); d >= 0 {
				var err error
				if scratch, err = appendText(scratch[:0], content[:i]); err != nil {
					return err
				}
				if err := text(d, scratch); err != nil {
					return err
				}
			}
		}
		content = content[i:]
		if len(content) == 0 {
			break
		}
		switch {
		case bytes.HasPrefix(content, cdataStart):
			j := bytes.Index(content, cdataEnd)
			if j < 0 {
				return errors.New("unterminated CDATA section")
			}
			if d := want(path); d >= 0 && len(path) > 0 {
				if err := text(d, content[len(cdataStart):j]); err != nil {
					return err
				}
			}
			content = content[j+len(cdataEnd):]
			continue
		case bytes.HasPrefix(content, []byte("<!--")):
			j := bytes.Index(content, commentEnd)
			if j < 0 {
				return errors.New("unterminated comment")
			}
			content = content[j+len(commentEnd):]
			continue
		case bytes.HasPrefix(content, []byte("<?")):
			j := bytes.Index(content, piEnd)
			if j < 0 {
				return errors.New("unterminated processing instruction")
			}
			content = content[j+len(piEnd):]
			continue
		}
		j := tagLen(content)
		if j < 0 {
			return errors.New("unterminated tag")
		}
		t := parseTag(content[:j])
		content = content[j:]
		switch {
		case t.closing:
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
		case !t.empty:
			path = append(path, knownName(t.local))
		}
	}
	return nil
}

// tagLen returns the length of the tag at the start of b, quoted values skipped; -1 if
// it does not end.
func tagLen(b []byte) int {
	var quote byte
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return i + 1
		}
	}
	return -1
}

// knownName returns the names elementText's callers look for as constants (no allocation)
// and "?" for any other.
func knownName(b []byte) string {
	switch string(b) {
	case "v":
		return "v"
	case "f":
		return "f"
	case "t":
		return "t"
	case "r":
		return "r"
	case "is":
		return "is"
	case "rPh":
		return "rPh"
	}
	return "?"
}
