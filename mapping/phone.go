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

// plans holds the countries subsync checks the length of. A number of any other country is
// accepted when its NSN has 4 to 14 digits and the whole has at most 15.
var plans = map[string]numberingPlan{
	"47":  {minNSN: 8, maxNSN: 8, badFirst: "01"}, // Norway
	"46":  {minNSN: 7, maxNSN: 9, trunk: '0'},     // Sweden
	"45":  {minNSN: 8, maxNSN: 8, badFirst: "01"}, // Denmark
	"358": {minNSN: 5, maxNSN: 12, trunk: '0'},    // Finland
	"354": {minNSN: 7, maxNSN: 9},                 // Iceland
	"298": {minNSN: 6, maxNSN: 6},                 // Faroe Islands
	"299": {minNSN: 6, maxNSN: 6},                 // Greenland
	"44":  {minNSN: 9, maxNSN: 10, trunk: '0'},    // United Kingdom
	"49":  {minNSN: 6, maxNSN: 13, trunk: '0'},    // Germany
	"48":  {minNSN: 9, maxNSN: 9},                 // Poland
	"33":  {minNSN: 9, maxNSN: 9, trunk: '0'},     // France
	"31":  {minNSN: 9, maxNSN: 9, trunk: '0'},     // Netherlands
	"32":  {minNSN: 8, maxNSN: 9, trunk: '0'},     // Belgium
	"34":  {minNSN: 9, maxNSN: 9},                 // Spain
	"39":  {minNSN: 6, maxNSN: 11},                // Italy (keeps its leading 0)
	"41":  {minNSN: 9, maxNSN: 9, trunk: '0'},     // Switzerland
	"353": {minNSN: 7, maxNSN: 9, trunk: '0'},     // Ireland
	"372": {minNSN: 7, maxNSN: 8},                 // Estonia
	"371": {minNSN: 8, maxNSN: 8},                 // Latvia
	"1":   {minNSN: 10, maxNSN: 10, trunk: '1'},   // North America
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
func normPhone(s, cc string) (string, string) {
	var buf [24]byte
	d := buf[:0]
	intl := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			if len(d) == cap(buf) {
				return "", "has too many digits"
			}
			d = append(d, c)
		case c == '+':
			if len(d) > 0 || intl {
				return "", "has a + that is not at the start"
			}
			intl = true
		case c == '(' && intl && i+2 < len(s) && s[i+1] == '0' && s[i+2] == ')' && len(d) > 0:
			i += 2 // "+44 (0)20": the (0) is the trunk prefix, not part of the number
		case c == ' ' || c == '-' || c == '.' || c == '/' || c == '(' || c == ')':
		default:
			return "", "contains " + quoteRune(rune(c)) + " (only digits, spaces, +, -, . and brackets belong in a phone number)"
		}
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
	if intl {
		n := countryCodeLen(d)
		if n == 0 || n >= len(d) || d[0] == '0' {
			return "", "has no valid country code"
		}
		nsn = d[n:]
		if string(d[:n]) != cc {
			code = string(d[:n])
		}
	} else {
		p, known := plans[cc]
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
	if p, known := plans[code]; known {
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
	out := make([]byte, 0, 1+len(code)+len(nsn))
	out = append(out, '+')
	out = append(out, code...)
	out = append(out, nsn...)
	return string(out), ""
}

func lengthMessage(code string, p numberingPlan, got int) string {
	want := strconv.Itoa(p.minNSN)
	if p.maxNSN != p.minNSN {
		want += " to " + strconv.Itoa(p.maxNSN)
	}
	return "has " + strconv.Itoa(got) + " digits after +" + code + ", want " + want
}
