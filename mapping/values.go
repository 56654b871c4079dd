package mapping

import (
	"math"
	"strconv"
	"strings"

	"github.com/subsync/subsync/sink"
)

// Consent values as subsync sends them in the consent fields.
const (
	ConsentYes = "1"
	ConsentNo  = "0"
)

// normYesNo reads a consent answer in Norwegian or English: ja/j/yes/y/1/true/sant/x is yes,
// nei/n/no/0/false/usant is no (any case). It returns ConsentYes or ConsentNo.
func normYesNo(s string) (string, string) {
	switch strings.ToLower(s) {
	case "ja", "j", "yes", "y", "1", "true", "sant", "x", "✓", "✔":
		return ConsentYes, ""
	case "nei", "n", "no", "0", "false", "usant":
		return ConsentNo, ""
	}
	return "", "is neither yes nor no (ja/nei, yes/no, 1/0, true/false, x)"
}

// Gender values as subsync sends them.
const (
	GenderMale   = "male"
	GenderFemale = "female"
	GenderOther  = "other"
)

// normGender reads a gender in Norwegian or English and returns GenderMale, GenderFemale or
// GenderOther. Values that say "unknown" (ukjent, unknown, "-", n/a, "vil ikke oppgi") give ""
// (nothing is sent).
func normGender(s string) (string, string) {
	switch fold(s) {
	case "m", "male", "man", "mann", "gutt", "boy", "herr", "mr", "hann":
		return GenderMale, ""
	case "f", "k", "female", "woman", "kvinne", "kv", "dame", "jente", "girl", "fru", "frk", "mrs", "ms", "hunn":
		return GenderFemale, ""
	case "o", "x", "other", "annet", "annen", "nonbinary", "ikkebinaer", "diverse", "d":
		return GenderOther, ""
	case "", "u", "unknown", "ukjent", "na", "vilikkeoppgi", "prefernottosay", "notspecified", "ikkeoppgitt":
		return "", ""
	}
	return "", "is not a gender subsync knows (male/female/other, mann/kvinne/annet)"
}

// normStatus reads a subscriber status in English or Norwegian: active/subscribed/aktiv,
// unsubscribed/avmeldt/avregistrert/opted out, bounce/bounced/cleaned/returnert. An empty value
// and an active one give "" (no status is sent): a source value never asks for activation,
// since a service that applies status=active would revive a person who unsubscribed there;
// a new subscriber sent without a status becomes active all the same. "reactivate" and "pending" are rejected: reviving a subscriber
// must be asked for explicitly (a constant), and a pending subscriber never confirmed.
func normStatus(s string) (string, string) {
	switch fold(s) {
	case "active", "subscribed", "aktiv", "abonnent", "pameldt", "paameldt":
		return "", ""
	case "unsubscribed", "unsubscribe", "avmeldt", "avregistrert", "optedout", "optout", "inaktiv", "inactive":
		return sink.StatusUnsubscribed, ""
	case "bounce", "bounced", "cleaned", "returnert", "sprett", "hardbounce":
		return sink.StatusBounce, ""
	case "reactivate":
		return "", "is \"reactivate\", which a file cannot ask for (use a constant status in the mapping)"
	case "pending":
		return "", "is \"pending\": the subscriber never confirmed"
	}
	return "", "is not a status (active, unsubscribed or bounce)"
}

// normNumber reads a number as people type it and returns it with a dot as the decimal
// separator and no thousands separators: "1 234,50" and "1.234,50" and "1,234.50" are all
// "1234.50". With one kind of separator only, a single comma or dot is the decimal separator
// ("12,5" is 12.5) and several are thousands separators ("1.234.567").
func normNumber(s string) (string, string) {
	const bad = "is not a number"
	if isPlainInteger(s) {
		return s, "" // the common case, without allocating
	}
	var buf [64]byte
	b := buf[:0]
	lastComma, lastDot, commas, dots := -1, -1, 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\'':
			continue
		case c == ',':
			commas++
			lastComma = len(b)
		case c == '.':
			dots++
			lastDot = len(b)
		case c == '-' || c == '+':
			if len(b) > 0 {
				return "", bad
			}
		case c < '0' || c > '9':
			return "", bad
		}
		if len(b) == cap(buf) {
			return "", "is too long for a number"
		}
		b = append(b, c)
	}
	dec := -1
	switch {
	case commas > 0 && dots > 0:
		dec = max(lastComma, lastDot)
		if b[dec] == ',' && commas > 1 || b[dec] == '.' && dots > 1 {
			return "", bad
		}
	case commas == 1:
		dec = lastComma
	case dots == 1:
		dec = lastDot
	}
	// Thousands separators must each be followed by exactly three digits ("1,2,3" is no number).
	for i, c := range b {
		if (c == ',' || c == '.') && i != dec {
			n := 0
			for j := i + 1; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
				n++
			}
			if n != 3 || i == 0 || b[i-1] < '0' || b[i-1] > '9' {
				return "", bad
			}
		}
	}
	out := make([]byte, 0, len(b))
	for i, c := range b {
		switch {
		case i == dec:
			out = append(out, '.')
		case c == ',' || c == '.':
		default:
			out = append(out, c)
		}
	}
	if len(out) == 0 || out[len(out)-1] == '.' || out[0] == '.' {
		return "", bad
	}
	f, err := strconv.ParseFloat(string(out), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", bad
	}
	if out[0] == '+' {
		out = out[1:]
	}
	if len(out) == 0 || out[0] == '.' || out[0] == '-' && (len(out) == 1 || out[1] == '.') {
		return "", bad
	}
	return string(out), ""
}

// isPlainInteger reports whether s is digits, with a leading minus at most, short enough to
// be a number the service reads exactly.
func isPlainInteger(s string) bool {
	i := 0
	if len(s) > 0 && s[0] == '-' {
		i = 1
	}
	if i == len(s) || len(s) > 18 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// matchChoice returns the choice that v names, compared case-insensitively.
func matchChoice(v string, choices []string) (string, bool) {
	for _, c := range choices {
		if c == v {
			return c, true
		}
	}
	for _, c := range choices {
		if strings.EqualFold(c, v) {
			return c, true
		}
	}
	return "", false
}
