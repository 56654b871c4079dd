package mapping

import (
	"encoding/binary"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of an e-mail address (RFC 5321): 254 bytes in all, 64 for the local part,
// 253 for the domain, 63 for one label of the domain.
const (
	maxEmail      = 254
	maxLocalPart  = 64
	maxDomain     = 253
	maxDomainPart = 63
)

// normEmail lower-cases a cleaned e-mail address and checks its syntax.
//
// The check is practical, not RFC 5322 in full: a local part of atext characters and dots
// (non-ASCII letters and digits allowed, as SMTPUTF8 allows them), one @, and a domain of at
// least two labels of letters, digits and hyphens. Internationalised domains are accepted in
// Unicode form (ø@bø.no) and in A-label form (xn--b-5ga.no). Quoted local parts, comments,
// IP-address literals and single-label domains are rejected: real mailing lists do not
// contain them, and the service would refuse them.
// It returns the address and "" when valid, or a message saying what is wrong.
func normEmail(a *Arena, s string) (string, string) {
	if plain, upper := plainEmail(s); plain {
		if upper {
			s = lowerLatin1(a, s)
		}
		return s, ""
	}
	s = lower(s)
	return s, checkEmail(s)
}

// checkEmail checks a lower-cased address one rule at a time and says what is wrong, or
// returns "".
func checkEmail(s string) string {
	if len(s) > maxEmail {
		return "is longer than 254 characters"
	}
	at := strings.IndexByte(s, '@')
	switch {
	case at < 0:
		return "has no @"
	case strings.IndexByte(s[at+1:], '@') >= 0:
		return "has more than one @"
	case strings.IndexByte(s, ' ') >= 0:
		return "contains a space"
	case at == 0:
		return "has nothing before the @"
	case at == len(s)-1:
		return "has no domain after the @"
	}
	if msg := checkLocal(s[:at]); msg != "" {
		return msg
	}
	return checkDomain(s[at+1:])
}

func checkLocal(l string) string {
	if len(l) > maxLocalPart {
		return "has more than 64 characters before the @"
	}
	if l[0] == '.' || l[len(l)-1] == '.' {
		return "has a dot at the start or end of the part before the @"
	}
	if strings.Contains(l, "..") {
		return "has two dots in a row"
	}
	for i := 0; i < len(l); {
		c := l[i]
		if c < utf8.RuneSelf {
			if !isAtext(c) && c != '.' {
				return "contains the character " + quoteRune(rune(c)) + " before the @"
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(l[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.M, r) {
			return "contains the character " + quoteRune(r) + " before the @"
		}
		i += size
	}
	return ""
}

// Byte classes of plain addresses, for plainEmail.
const (
	emailLocal  = 1 << iota // ASCII atext: may appear in a local part
	emailDomain             // a letter, a digit or '-': may appear in a domain label
	emailUpper              // A-Z
)

var emailClass = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		if isAtext(b) {
			t[c] |= emailLocal
		}
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' {
			t[c] |= emailDomain
		}
		if 'A' <= b && b <= 'Z' {
			t[c] |= emailUpper
		}
	}
	return t
}()

// plainEmail reports, in one pass, whether s is an address that, lower-cased, passes every
// check of normEmail, and whether it has upper case to lower. It takes ASCII and the letters
// of Latin-1 (à, Æ, ø, ß …, two bytes starting 0xC3), outside the top-level domain. That is
// the common case, settled without the checks one by one (which run for anything else, and
// say what is wrong). It never accepts what those checks would refuse.
func plainEmail(s string) (plain, upper bool) {
	if len(s) > maxEmail {
		return false, false
	}
	// The local part: atext and single dots, neither at its start nor at its end.
	i, flags := 0, uint8(0)
	for i < len(s) {
		if k := emailClass[s[i]]; k&emailLocal != 0 {
			flags |= k
			i++
			continue
		}
		if latin1Letter(s, i) {
			flags |= latin1Upper(s[i+1])
			i += 2
			continue
		}
		if s[i] != '.' || i == 0 || s[i-1] == '.' {
			break // the @, or a character checked below
		}
		i++
	}
	if i == 0 || i > maxLocalPart || i >= len(s)-1 || s[i] != '@' || s[i-1] == '.' {
		return false, false
	}
	// The domain: at least two labels of letters, digits and inner hyphens, each at most 63
	// bytes; no second @.
	d := s[i+1:]
	if len(d) > maxDomain {
		return false, false
	}
	for label := 0; ; {
		j, latin := label, false // latin: the label has a Latin-1 letter
		for j < len(d) {
			if k := emailClass[d[j]]; k&emailDomain != 0 {
				flags |= k
				j++
				continue
			}
			if d[j] == '.' {
				break
			}
			if !latin1Letter(d, j) {
				return false, false
			}
			flags |= latin1Upper(d[j+1])
			latin = true
			j += 2
		}
		if n := j - label; n == 0 || n > maxDomainPart || d[label] == '-' || d[j-1] == '-' {
			return false, false
		}
		if j < len(d) {
			label = j + 1
			continue
		}
		// The top-level domain (the last label): at least two characters, not all digits
		// (and ASCII here, where bytes are characters).
		tld := d[label:]
		if label == 0 || len(tld) < 2 || latin {
			return false, false
		}
		for k := 0; k < len(tld); k++ {
			if tld[k] < '0' || tld[k] > '9' {
				return true, flags&emailUpper != 0
			}
		}
		return false, false
	}
}

// isAtext reports whether c is an RFC 5322 atext character.
func isAtext(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+/=?^_`{|}~-", c) >= 0
}

func checkDomain(d string) string {
	if len(d) > maxDomain {
		return "has a domain longer than 253 characters"
	}
	if d[0] == '[' {
		return "has an IP address instead of a domain"
	}
	for rest := d; ; {
		label := rest
		dot := strings.IndexByte(rest, '.')
		if dot >= 0 {
			label, rest = rest[:dot], rest[dot+1:]
		}
		if label == "" {
			return "has an empty part in the domain " + quote(d)
		}
		if len(label) > maxDomainPart && utf8.RuneCountInString(label) > maxDomainPart {
			return "has a domain part longer than 63 characters"
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "has a domain part that starts or ends with a hyphen"
		}
		for i := 0; i < len(label); {
			c := label[i]
			if c < utf8.RuneSelf {
				if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
					return "contains the character " + quoteRune(rune(c)) + " in the domain"
				}
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(label[i:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.M, r) {
				return "contains the character " + quoteRune(r) + " in the domain"
			}
			i += size
		}
		if dot < 0 {
			break
		}
	}
	dot := strings.LastIndexByte(d, '.')
	if dot < 0 {
		return "has no dot in the domain " + quote(d)
	}
	tld := d[dot+1:]
	digits := true
	for i := 0; i < len(tld); i++ {
		if tld[i] < '0' || tld[i] > '9' {
			digits = false
			break
		}
	}
	if digits {
		return "has a numeric top-level domain"
	}
	if utf8.RuneCountInString(tld) < 2 {
		return "has a one-letter top-level domain " + quote(tld)
	}
	return ""
}

func quote(s string) string { return "\"" + s + "\"" }

func quoteRune(r rune) string {
	if r == ',' {
		return "\",\" (a comma)"
	}
	if r < ' ' || r == 0x7f {
		return "U+00" + string(hexDigits[r>>4]) + string(hexDigits[r&0xF])
	}
	return "\"" + string(r) + "\""
}

const hexDigits = "0123456789ABCDEF"

// latin1Letter reports whether s holds at i a letter of Latin-1 (U+00C0 to U+00FF but × and
// ÷): 0xC3 and a second byte.
func latin1Letter(s string, i int) bool {
	return s[i] == 0xC3 && i+1 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+1] != 0x97 && s[i+1] != 0xB7
}

// latin1Upper returns emailUpper when the second byte b of a Latin-1 letter makes it upper
// case (À to Þ).
func latin1Upper(b byte) uint8 {
	if b <= 0x9E {
		return emailUpper
	}
	return 0
}

// lowerLatin1 lower-cases s, which has no runes but ASCII and U+0080..U+00FF: A..Z by
// +0x20, and À..Þ (C3 80..9E, but × at C3 97) by +0x20 in their second byte. Eight ASCII
// bytes are lowered at a time, with bit tricks on one 64-bit word.
func lowerLatin1(a *Arena, s string) string {
	b := a.bytes(len(s))
	copy(b, s)
	for i := 0; i < len(b); {
		if i+8 <= len(b) || i > 0 && len(b) >= 8 {
			j := min(i, len(b)-8) // the word from i, or the one that ends b (lowered twice: alike)
			if x := binary.LittleEndian.Uint64(b[j:]); x&0x8080808080808080 == 0 {
				binary.LittleEndian.PutUint64(b[j:], lowerASCII(x))
				i = j + 8
				continue
			}
		}
		for end := min(i+8, len(b)); i < end; i++ { // a word with a Latin-1 letter
			switch c := b[i]; {
			case 'A' <= c && c <= 'Z':
				b[i] = c + 'a' - 'A'
			case c == 0xC3:
				i++
				if c = b[i]; c <= 0x9E && c != 0x97 {
					b[i] = c + 0x20
				}
			}
		}
	}
	return unsafeString(b)
}

// lowerASCII lowers the bytes A..Z of x, eight ASCII bytes, by setting their 0x20 bit: a byte
// from A on gets its top bit set by adding 0x80-'A', one past Z by adding 0x80-'Z'-1 (no
// byte carries into the next: each is below 0x80).
func lowerASCII(x uint64) uint64 {
	const ones = 0x0101010101010101
	upper := (x + ones*(0x80-'A')) &^ (x + ones*(0x80-'Z'-1)) & (ones * 0x80)
	return x | upper>>2
}

// lower returns s in lower case; s itself, without allocating, when it has no upper case.
func lower(s string) string {
	// ASCII and U+0080..U+00FF (two bytes, C2 or C3 first) are lowered byte by byte:
	// A..Z by +0x20, and À..Þ (C3 80..9E, but × at C3 97) by +0x20 in their second byte.
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < utf8.RuneSelf:
			upper = upper || 'A' <= c && c <= 'Z'
		case (c == 0xC2 || c == 0xC3) && i+1 < len(s) && s[i+1]&0xC0 == 0x80:
			i++
			upper = upper || c == 0xC3 && s[i] <= 0x9E && s[i] != 0x97
		default:
			return strings.ToLower(s)
		}
	}
	if !upper {
		return s
	}
	return lowerLatin1(nil, s)
}
