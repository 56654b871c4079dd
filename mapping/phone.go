package mapping

import (
	"strconv"
)

// DefaultCountry is the country calling code a phone number without one is given.
const DefaultCountry = "+47"

// maxE164Digits is the most digits an E.164 number has, country code included.
const maxE164Digits = 15

// numberingPlan is what subsync knows of one country's numbers: the lengths of the national
// significant number (NSN, the digits after the country code) and the trunk prefix dialled
// before it at home (0 in Sweden, 1 in North America), which E.164 drops.
type numberingPlan struct {
	minNSN, maxNSN int
	trunk          byte   // 0 when the country has no trunk prefix
	badFirst       string // digits an NSN cannot start with
}

// planOf returns what subsync knows of the numbers of country calling code cc. A number of
// any other country is accepted when its NSN has 4 to 14 digits and the whole has at most 15.
// (A switch: looked up twice a phone number, it costs a fraction of a map lookup.)
func planOf(cc string) (numberingPlan, bool) {
	switch cc {
	case "47": // Norway
		return numberingPlan{minNSN: 8, maxNSN: 8, badFirst: "01"}, true
	case "46": // Sweden
		return numberingPlan{minNSN: 7, maxNSN: 9, trunk: '0'}, true
	case "45": // Denmark
		return numberingPlan{minNSN: 8, maxNSN: 8, badFirst: "01"}, true
	case "358": // Finland
		return numberingPlan{minNSN: 5, maxNSN: 12, trunk: '0'}, true
	case "354": // Iceland
		return numberingPlan{minNSN: 7, maxNSN: 9}, true
	case "298": // Faroe Islands
		return numberingPlan{minNSN: 6, maxNSN: 6}, true
	case "299": // Greenland
		return numberingPlan{minNSN: 6, maxNSN: 6}, true
	case "44": // United Kingdom
		return numberingPlan{minNSN: 9, maxNSN: 10, trunk: '0'}, true
	case "49": // Germany
		return numberingPlan{minNSN: 6, maxNSN: 13, trunk: '0'}, true
	case "48": // Poland
		return numberingPlan{minNSN: 9, maxNSN: 9}, true
	case "33": // France
		return numberingPlan{minNSN: 9, maxNSN: 9, trunk: '0'}, true
	case "31": // Netherlands
		return numberingPlan{minNSN: 9, maxNSN: 9, trunk: '0'}, true
	case "32": // Belgium
		return numberingPlan{minNSN: 8, maxNSN: 9, trunk: '0'}, true
	case "34": // Spain
		return numberingPlan{minNSN: 9, maxNSN: 9}, true
	case "39": // Italy (keeps its leading 0)
		return numberingPlan{minNSN: 6, maxNSN: 11}, true
	case "41": // Switzerland
		return numberingPlan{minNSN: 9, maxNSN: 9, trunk: '0'}, true
	case "353": // Ireland
		return numberingPlan{minNSN: 7, maxNSN: 9, trunk: '0'}, true
	case "372": // Estonia
		return numberingPlan{minNSN: 7, maxNSN: 8}, true
	case "371": // Latvia
		return numberingPlan{minNSN: 8, maxNSN: 8}, true
	case "1": // North America
		return numberingPlan{minNSN: 10, maxNSN: 10, trunk: '1'}, true
	}
	return numberingPlan{}, false
}

// countryCodeLen returns how many digits of an international number (after the +) are its
// country calling code. Calling codes are prefix-free: 1 and 7 are one digit, the two-digit
// codes are listed, every other is three digits.
func countryCodeLen(d []byte) int {
	if len(d) == 0 {
		return 0
	}
	switch d[0] {
	case '1', '7':
		return 1
	}
	if len(d) < 2 {
		return 0
	}
	switch string(d[:2]) {
	case "20", "27", "30", "31", "32", "33", "34", "36", "39", "40", "41", "43", "44", "45",
		"46", "47", "48", "49", "51", "52", "53", "54", "55", "56", "57", "58", "60", "61",
		"62", "63", "64", "65", "66", "81", "82", "84", "86", "90", "91", "92", "93", "94",
		"95", "98":
		return 2
	}
	return 3
}

// parseCountry checks a default country calling code as a mapping gives it ("+47", "47").
func parseCountry(s string) (string, bool) {
	if len(s) > 0 && s[0] == '+' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 3 || s[0] == '0' {
		return "", false
	}
	if _, err := strconv.Atoi(s); err != nil {
		return "", false
	}
	if countryCodeLen([]byte(s)) != len(s) {
		return "", false
	}
	return s, true
}

// normPhone normalises a cleaned phone number to E.164 ("+4791234567"), reading a number
// without a country code as a number of country cc (digits only, "47").
//
// Spaces, hyphens, dots, slashes and brackets are dropped; "+" or "00" starts an
// international number, and an "(0)" right after the country code is dropped
// ("+44 (0)20 …"). A national number loses its trunk prefix (the 0 of "070-123 45 67"
// in Sweden). A number of the default country written with its country code but no "+"
// ("4791234567") is recognised by its length. Letters, extensions, several numbers in one
// cell and numbers of an impossible length are rejected with a message.
func normPhone(a *Arena, s, cc string) (string, string) {
	var buf [24]byte
	d, intl, msg := phoneDigits(&buf, s)
	if msg != "" {
		return "", msg
	}
	if len(d) == 0 {
		return "", "has no digits"
	}
	if !intl && len(d) > 2 && d[0] == '0' && d[1] == '0' {
		intl = true
		d = d[2:]
	}
	code := cc // the country calling code: the default, or the number's own
	nsn := d
	p, known := planOf(cc)
	if intl {
		n := countryCodeLen(d)
		if n == 0 || n >= len(d) || d[0] == '0' {
			return "", "has no valid country code"
		}
		nsn = d[n:]
		if string(d[:n]) != cc {
			code = string(d[:n])
			p, known = planOf(code)
		}
	} else {
		switch {
		case known && p.trunk != 0 && len(nsn) > p.minNSN && nsn[0] == p.trunk:
			nsn = nsn[1:]
		case known && len(nsn) > p.maxNSN && len(nsn)-len(cc) >= p.minNSN &&
			len(nsn)-len(cc) <= p.maxNSN && string(nsn[:len(cc)]) == cc:
			nsn = nsn[len(cc):] // "4791234567": the country code without its +
		case !known && len(nsn) > 1 && nsn[0] == '0':
			nsn = nsn[1:] // most countries dial a 0 before a national number
		}
	}
	if known {
		if len(nsn) < p.minNSN || len(nsn) > p.maxNSN {
			return "", lengthMessage(code, p, len(nsn))
		}
		for i := 0; i < len(p.badFirst); i++ {
			if nsn[0] == p.badFirst[i] {
				return "", "is not a valid number for +" + code + " (cannot start with " + string(nsn[0]) + ")"
			}
		}
	} else if len(nsn) < 4 || len(code)+len(nsn) > maxE164Digits {
		return "", "has an impossible length for +" + code
	}
	if len(code)+len(nsn) > maxE164Digits {
		return "", "has more than 15 digits"
	}
	if len(s) == 1+len(code)+len(nsn) && s[0] == '+' && s[1:1+len(code)] == code && s[1+len(code):] == string(nsn) {
		return s, "" // already in E.164 form: no copy
	}
	out := a.bytes(1 + len(code) + len(nsn)) // written in place
	out[0] = '+'
	copy(out[1+copy(out[1:], code):], nsn)
	return unsafeString(out), ""
}

// phone classes of bytes for phoneDigits' common case: a digit, a separator dropped as it
// is (space, hyphen, dot, slash), anything else.
const (
	phoneSep   = 0
	phoneDigit = 1
	phoneOther = 2
)

var phoneClass = func() (t [256]uint8) {
	for i := range t {
		t[i] = phoneOther
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = phoneDigit
	}
	for _, c := range " -./" {
		t[c] = phoneSep
	}
	return t
}()

// phoneDigits collects the digits of s into buf, and reports whether s starts an
// international number with "+", or what is wrong with it.
//
// The common case, digits and separators after an optional "+", takes one pass with no
// branch on the kind of byte: every byte is written, and the count moves on for a digit.
// Anything else (brackets, a misplaced "+", a letter, more digits than buf holds) goes
// through phoneDigitsSlow, which says what is wrong.
func phoneDigits(buf *[24]byte, s string) (d []byte, intl bool, msg string) {
	i := 0
	if len(s) > 0 && s[0] == '+' {
		i, intl = 1, true
	}
	if len(s)-i <= len(buf) {
		n, kinds := 0, uint8(0)
		for _, c := range []byte(s[i:]) {
			k := phoneClass[c]
			buf[n] = c // n < len(buf): n counts bytes before this one, len(s)-i at most
			n += int(k & phoneDigit)
			kinds |= k
		}
		if kinds&phoneOther == 0 {
			return buf[:n], intl, ""
		}
	}
	return phoneDigitsSlow(buf, s)
}

// phoneDigitsSlow is phoneDigits for any s, byte by byte.
func phoneDigitsSlow(buf *[24]byte, s string) (d []byte, intl bool, msg string) {
	d = buf[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			if len(d) == cap(buf) {
				return nil, false, "has too many digits"
			}
			d = append(d, c)
		case c == '+':
			if len(d) > 0 || intl {
				return nil, false, "has a + that is not at the start"
			}
			intl = true
		case c == '(' && intl && i+2 < len(s) && s[i+1] == '0' && s[i+2] == ')' && len(d) > 0:
			i += 2 // "+44 (0)20": the (0) is the trunk prefix, not part of the number
		case c == ' ' || c == '-' || c == '.' || c == '/' || c == '(' || c == ')':
		default:
			return nil, false, "contains " + quoteRune(rune(c)) + " (only digits, spaces, +, -, . and brackets belong in a phone number)"
		}
	}
	return d, intl, ""
}

func lengthMessage(code string, p numberingPlan, got int) string {
	want := strconv.Itoa(p.minNSN)
	if p.maxNSN != p.minNSN {
		want += " to " + strconv.Itoa(p.maxNSN)
	}
	return "has " + strconv.Itoa(got) + " digits after +" + code + ", want " + want
}
