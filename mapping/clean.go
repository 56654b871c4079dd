package mapping

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// clean trims s, collapses every run of white space (and control characters, the BOM and
// zero-width spaces) inside it to one ASCII space, and puts it in Unicode NFC.
// It returns s itself or a substring of it, without allocating, when only ASCII spaces at its
// ends are to go and it is already NFC. ok is false when s is not valid UTF-8.
func clean(s string) (_ string, ok bool) { return cleanIn(nil, s) }

// cleanIn is clean with a value it makes held in a (see Arena).
func cleanIn(a *Arena, s string) (_ string, ok bool) {
	s = trimSpaces(s)
	stable := true // no rune NFC could change
	prevSpace := true
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == 0x7f {
				if c == ' ' && i > 0 && prevSpace {
					return collapseSpaces(a, s) // "Per  Olav"
				}
				if c != ' ' || prevSpace {
					return cleanSlow(s)
				}
				prevSpace = true
			} else {
				prevSpace = false
			}
			i++
			continue
		}
		prevSpace = false
		if latin2(s, i) {
			i += 2
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return "", false
		}
		if isBlank(r) {
			return cleanSlow(s)
		}
		stable = false
		i += size
	}
	if stable {
		return s, true
	}
	return norm.NFC.String(s), true
}

// latin2 reports whether s holds at i a rune from U+00A1 to U+02FF in two bytes: the letters
// of Latin scripts (æ, ø, å, é, ß, ł …). None of them is blank, and a string of them and
// ASCII is already NFC: each is a starter that composes with nothing (combining marks begin
// at U+0300). TestLatinRunesAreNFC checks every one.
func latin2(s string, i int) bool {
	if i+1 >= len(s) || s[i+1]&0xC0 != 0x80 {
		return false
	}
	c := s[i]
	return 0xC3 <= c && c <= 0xCB || c == 0xC2 && s[i+1] > 0xA0
}

// isBlank reports whether r counts as white space for clean.
func isBlank(r rune) bool {
	switch r {
	case '\uFEFF', '\u200B':
		return true
	}
	return unicode.IsSpace(r) || unicode.IsControl(r)
}

// collapseSpaces is clean for s, trimmed, that has two ASCII spaces in a row: when s holds
// nothing but printable ASCII, ASCII spaces and latin2 runes, every run of spaces becomes one,
// in one pass, written in a (the result is NFC as it stands, see latin2); anything else goes
// to cleanSlow.
func collapseSpaces(a *Arena, s string) (string, bool) {
	b := a.bytes(len(s))
	n := 0
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ':
			if b[n-1] != ' ' { // n > 0: s does not start with a space
				b[n] = ' '
				n++
			}
			i++
		case ' ' < c && c < 0x7f:
			b[n] = c
			n++
			i++
		case latin2(s, i):
			b[n], b[n+1] = c, s[i+1]
			n += 2
			i += 2
		default:
			return cleanSlow(s)
		}
	}
	return unsafeString(b[:n]), true
}

func cleanSlow(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	// First pass: is any change of white space needed?
	needs := false
	prevSpace := true
	for _, r := range s {
		if isBlank(r) {
			if r != ' ' || prevSpace {
				needs = true
				break
			}
			prevSpace = true
			continue
		}
		prevSpace = false
	}
	if prevSpace {
		needs = true
	}
	if !needs {
		return norm.NFC.String(s), true
	}
	var b strings.Builder
	b.Grow(len(s))
	pending := false
	for _, r := range s {
		if isBlank(r) {
			pending = b.Len() > 0
			continue
		}
		if pending {
			b.WriteByte(' ')
			pending = false
		}
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String()), true
}

// shorten returns s cut to at most max runes, with an ellipsis when cut. Reject values are
// shortened so that a reject record stays small and a person can still recognise the value.
func shorten(s string, max int) string {
	if len(s) <= max {
		if utf8.ValidString(s) {
			return s
		}
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return strings.ToValidUTF8(s[:i], "\uFFFD") + "…"
		}
		n++
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// fold turns a header name or a choice into a key for case- and accent-insensitive
// comparison: lower case, accents removed (é→e, å→a, ø→o, æ→ae, ß→ss), and every
// character that is neither a letter nor a digit dropped ("E-mail 1 - Value" → "email1value").
func fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range norm.NFD.String(s) {
		switch {
		case r < utf8.RuneSelf:
			switch {
			case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
				b.WriteRune(r)
			case 'A' <= r && r <= 'Z':
				b.WriteRune(r + 'a' - 'A')
			}
		case unicode.Is(unicode.Mn, r):
			// a combining accent: dropped
		default:
			switch unicode.ToLower(r) {
			case 'ø':
				b.WriteByte('o')
			case 'æ':
				b.WriteString("ae")
			case 'œ':
				b.WriteString("oe")
			case 'ß':
				b.WriteString("ss")
			case 'đ', 'ð':
				b.WriteByte('d')
			case 'þ':
				b.WriteString("th")
			case 'ł':
				b.WriteByte('l')
			default:
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					b.WriteRune(unicode.ToLower(r))
				}
			}
		}
	}
	return b.String()
}
