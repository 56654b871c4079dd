package mapping

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"
)

func TestClean(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
		bad            bool
	}{
		{"clean ASCII unchanged", "Ola Nordmann", "Ola Nordmann", false},
		{"empty", "", "", false},
		{"trim", "  Ola  ", "Ola", false},
		{"collapse inner spaces", "Ola   Nordmann", "Ola Nordmann", false},
		{"tabs and newlines", "Ola\t\nNordmann\r\n", "Ola Nordmann", false},
		{"no-break and thin spaces", "\u00a0Kari\u202fNordmann\u00a0", "Kari Nordmann", false},
		{"BOM and zero-width space", "\ufeffKari\u200b", "Kari", false},
		{"only white space", " \t\u00a0 ", "", false},
		{"control characters", "a\x00\x01b", "a b", false},
		{"NFC composes a decomposed å", "A\u030asa", "Åsa", false},
		{"NFC keeps composed", "Bjørn Ærø", "Bjørn Ærø", false},
		{"decomposed with spaces", " Mari\u0301a  Lo\u0301pez ", "María López", false},
		{"invalid UTF-8", "Bj\xf8rn", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := clean(tc.in)
			require.Equal(t, !tc.bad, ok, "clean(%q) ok", tc.in)
			if !tc.bad {
				require.Equal(t, tc.want, got, "clean(%q)", tc.in)
			}
		})
	}
}

func TestCleanDoesNotAllocateWhenClean(t *testing.T) {
	in := strings.Repeat("x", 10) + " Nordmann"
	allocs := testing.AllocsPerRun(100, func() {
		if s, _ := clean(in); s != in {
			t.Fatal("changed")
		}
	})
	require.Zero(t, allocs, "clean of a clean ASCII value allocates")
	nordic := "Bjørn Ærø"
	allocs = testing.AllocsPerRun(100, func() { clean(nordic) })
	require.Zero(t, allocs, "clean of a clean NFC value allocates")
}

// clean skips Unicode normalisation for strings of ASCII and U+00A1..U+02FF. That holds only
// if every such rune is a two-byte, non-blank starter that is NFC alone and next to any other.
func TestLatinRunesAreNFC(t *testing.T) {
	t.Parallel()
	var latin []rune
	for r := rune(0x80); r < 0x300; r++ {
		s := string(r)
		if !latin2(s, 0) {
			require.False(t, r >= 0xA1, "U+%04X is not taken by the fast path", r)
			continue
		}
		require.Len(t, s, 2)
		require.False(t, isBlank(r), "U+%04X is blank", r)
		require.Zero(t, norm.NFC.PropertiesString(s).CCC(), "U+%04X is not a starter", r)
		require.True(t, norm.NFC.IsNormalString(s), "U+%04X is not NFC", r)
		latin = append(latin, r)
	}
	require.Len(t, latin, 0x300-0xA1)
	for _, a := range latin {
		for _, b := range latin {
			pair := string([]rune{a, b})
			if !norm.NFC.IsNormalString(pair) {
				t.Fatalf("U+%04X U+%04X is not NFC", a, b)
			}
		}
	}
	// A combining mark after one of them is composed all the same.
	got, ok := clean("A\u030A" + "se e\u0301")
	require.True(t, ok)
	require.Equal(t, "Åse é", got)
}

// clean passes eight printable ASCII bytes at a time; a blank or a control character must be
// caught wherever it stands in the word.
func TestCleanAtEveryPosition(t *testing.T) {
	t.Parallel()
	want := func(s string) string { return norm.NFC.String(strings.Join(strings.FieldsFunc(s, isBlank), " ")) }
	for _, sp := range []string{" ", "  ", "\t", "\n", "\x00", "\x1f", "\x7f", "!", "~", "ø", "\u00a0", "\u200b", "\ufeff", "e\u0301", "\u2028"} {
		for pos := 0; pos <= 17; pos++ {
			s := strings.Repeat("a", pos) + sp + strings.Repeat("b", 17-pos)
			got, ok := clean(s)
			require.True(t, ok)
			require.Equal(t, want(s), got, "clean(%q)", s)
		}
	}
	_, ok := clean("abcdefgh\xffabcdefgh")
	require.False(t, ok, "invalid UTF-8 after a plain word")
}

// lower takes a short cut for ASCII and Latin-1; it must agree with strings.ToLower for every
// rune, wherever it stands.
func TestLowerAgreesWithToLower(t *testing.T) {
	t.Parallel()
	for r := rune(0); r < 0x3000; r++ {
		for _, s := range []string{string(r), "Ab" + string(r), string(r) + "X@Y.no" + string(r), strings.Repeat("Z", 70) + string(r), string(r) + "Æ@X.no" + string(r), strings.Repeat("É", 40) + string(r)} {
			if got, want := lower(s), strings.ToLower(s); got != want {
				t.Fatalf("lower(%q) = %q, want %q", s, got, want)
			}
			if isLatin1(s) {
				if got, want := lowerLatin1(nil, s), strings.ToLower(s); got != want {
					t.Fatalf("lowerLatin1(nil, %q) = %q, want %q", s, got, want)
				}
			}
		}
		if r >= 0x100 {
			continue
		}
		// lowerLatin1 takes eight bytes at a time: the rune at every position of a word, and
		// of the overlapping word that ends a string, next to upper and lower case.
		for n := 0; n <= 17; n++ {
			for pos := 0; pos <= n; pos++ {
				for _, fill := range []string{"aB", "Z@"} {
					s := strings.Repeat(fill[:1], pos) + string(r) + strings.Repeat(fill[1:], n-pos)
					if got, want := lowerLatin1(nil, s), strings.ToLower(s); got != want {
						t.Fatalf("lowerLatin1(nil, %q) = %q, want %q", s, got, want)
					}
				}
			}
		}
	}
}

func isLatin1(s string) bool {
	for _, r := range s {
		if r > 0xFF {
			return false
		}
	}
	return utf8.ValidString(s)
}

func TestFold(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"E-post":           "epost",
		"E-mail 1 - Value": "email1value",
		"Email Address":    "emailaddress",
		"Fødselsdato":      "fodselsdato",
		"KJØNN":            "kjonn",
		"Förnamn":          "fornamn",
		"Æ ø å":            "aeoa",
		"Straße":           "strasse",
		"Postnr.":          "postnr",
		"first_name":       "firstname",
	}
	for in, want := range cases {
		require.Equal(t, want, fold(in), "fold(%q)", in)
	}
}

func TestShorten(t *testing.T) {
	t.Parallel()
	require.Equal(t, "abc", shorten("abc", 5))
	require.Equal(t, "abcd…", shorten("abcdefgh", 5))
	require.Equal(t, "øøøø…", shorten("øøøøøøøø", 5))
	require.Equal(t, "\uFFFD", shorten("\xff", 5))
	require.LessOrEqual(t, len([]rune(shorten(strings.Repeat("é", 500), 64))), 64)
}

func TestNormEmail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want, wantErr string
	}{
		{"ola@example.no", "ola@example.no", ""},
		{"Ola.Nordmann@Example.NO", "ola.nordmann@example.no", ""},
		{"ola+news@example.co.uk", "ola+news@example.co.uk", ""},
		{"o'brien@example.ie", "o'brien@example.ie", ""},
		{"first_last-x@sub.domain.example.com", "first_last-x@sub.domain.example.com", ""},
		{"ÅSE@BØ.NO", "åse@bø.no", ""},                 // IDN domain, Unicode local part
		{"post@xn--b-5ga.no", "post@xn--b-5ga.no", ""}, // A-label
		{"kari@例え.テスト", "kari@例え.テスト", ""},
		{"ola.example.no", "", "has no @"},
		{"ola@@example.no", "", "has more than one @"},
		{"ola@nordmann@example.no", "", "has more than one @"},
		{"ola nordmann@example.no", "", "contains a space"},
		{"@example.no", "", "nothing before the @"},
		{"ola@", "", "no domain after the @"},
		{".ola@example.no", "", "dot at the start or end"},
		{"ola.@example.no", "", "dot at the start or end"},
		{"ola..n@example.no", "", "two dots in a row"},
		{"ola@example", "", "has no dot in the domain"},
		{"ola@example..no", "", "empty part in the domain"},
		{"ola@.example.no", "", "empty part in the domain"},
		{"ola@example.no.", "", "empty part in the domain"},
		{"ola@-example.no", "", "starts or ends with a hyphen"},
		{"ola@example,no", "", "a comma"},
		{"ola@exa_mple.no", "", "in the domain"},
		{"ola@example.n", "", "one-letter top-level domain"},
		{"ola@10.0.0.1", "", "numeric top-level domain"},
		{"ola@[10.0.0.1]", "", "IP address"},
		{`"ola"@example.no`, "", "before the @"},
		{"ola(comment)@example.no", "", "before the @"},
		{strings.Repeat("a", 65) + "@example.no", "", "more than 64 characters"},
		{"a@" + strings.Repeat("b", 64) + ".no", "", "longer than 63"},
		{strings.Repeat("a", 60) + "@" + strings.Repeat(strings.Repeat("b", 60)+".", 4) + "no", "", "longer than 254"},
	}
	for _, tc := range cases {
		got, msg := normEmail(nil, tc.in)
		if tc.wantErr != "" {
			require.Contains(t, msg, tc.wantErr, "normEmail(nil, %q)", tc.in)
			continue
		}
		require.Empty(t, msg, "normEmail(nil, %q)", tc.in)
		require.Equal(t, tc.want, got, "normEmail(nil, %q)", tc.in)
	}
}

// TestPlainEmail: the one-pass path takes the common addresses (FuzzPlainEmail checks that it
// takes nothing the rules refuse).
func TestPlainEmail(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"kontakt123@example.com", "Ola.Nordmann@Example.NO", "o'neil+news@mail.example.co.uk",
		"a@b.no", "x-1@xn--b-5ga.no", "åse@bø.no", "Åse.Ærø@Bø.NO", "ß@straße.de"} {
		plain, upper := plainEmail(in)
		require.True(t, plain, "plainEmail(%q)", in)
		require.Equal(t, in != strings.ToLower(in), upper, "plainEmail(%q) upper", in)
	}
	for _, in := range []string{"a@b.øy", "łukasz@example.pl", "a×b@c.no", "ola@example", "ola@10.0.0.1", "ola..n@example.no", "ola@example.n", " a@b.no"} {
		plain, _ := plainEmail(in)
		require.False(t, plain, "plainEmail(%q)", in)
	}
}

func TestNormPhone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, cc, want, wantErr string
	}{
		{"91234567", "47", "+4791234567", ""},
		{"912 34 567", "47", "+4791234567", ""},
		{"+47 912 34 567", "47", "+4791234567", ""},
		{"0047 91234567", "47", "+4791234567", ""},
		{"4791234567", "47", "+4791234567", ""}, // country code without +
		{"+47-22-12-34-56", "47", "+4722123456", ""},
		{"(+47) 22 12 34 56", "47", "+4722123456", ""},
		{"+46 70 123 45 67", "47", "+46701234567", ""},
		{"070-123 45 67", "46", "+46701234567", ""}, // Swedish national, trunk 0 dropped
		{"+44 (0)20 7946 0000", "47", "+442079460000", ""},
		{"+1 (555) 123-4567", "47", "+15551234567", ""},
		{"1-555-123-4567", "1", "+15551234567", ""},
		{"+45 12 34 56 78", "47", "", "cannot start with 1"},
		{"+45 32 34 56 78", "47", "+4532345678", ""},
		{"+86 138 0013 8000", "47", "+8613800138000", ""}, // unknown plan: generic check
		{"030 1234567", "49", "+49301234567", ""},
		{"0612345678", "33", "+33612345678", ""},
		{"612345678", "34", "+34612345678", ""},
		{"06 1234 5678", "81", "+81612345678", ""}, // country without a plan: trunk 0 dropped
		{"1234567", "47", "", "has 7 digits after +47, want 8"},
		{"912345678", "47", "", "has 9 digits after +47, want 8"},
		{"01234567", "47", "", "cannot start with 0"},
		{"+47 123", "47", "", "has 3 digits"},
		{"91234567 / 92345678", "47", "", "digits after +47"},
		{"9123 4567 ext 12", "47", "", "contains \"e\""},
		{"tlf 91234567", "47", "", "contains \"t\""},
		{"91+234567", "47", "", "not at the start"},
		{"+", "47", "", "has no digits"},
		{"---", "47", "", "has no digits"},
		{"+0 1234567", "47", "", "no valid country code"},
		{"+999 12", "47", "", "impossible length"},
		{"+999 1234567890123", "47", "", "impossible length"},
		{strings.Repeat("9", 30), "47", "", "too many digits"},
	}
	for _, tc := range cases {
		got, msg := normPhone(nil, tc.in, tc.cc)
		if tc.wantErr != "" {
			require.Contains(t, msg, tc.wantErr, "normPhone(nil, %q, %q)", tc.in, tc.cc)
			continue
		}
		require.Empty(t, msg, "normPhone(nil, %q, %q)", tc.in, tc.cc)
		require.Equal(t, tc.want, got, "normPhone(nil, %q, %q)", tc.in, tc.cc)
	}
}

func TestParseCountry(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"+47": "47", "47": "47", "+1": "1", "+358": "358", "+46": "46"} {
		got, ok := parseCountry(in)
		require.True(t, ok, "parseCountry(%q)", in)
		require.Equal(t, want, got)
	}
	for _, in := range []string{"", "+", "+0", "+4", "+470", "+35", "NO", "+47a", "+1234"} {
		_, ok := parseCountry(in)
		require.False(t, ok, "parseCountry(%q) accepted", in)
	}
}

func TestNormDate(t *testing.T) {
	t.Parallel()
	today := civil{2025, 6, 15}
	bday := birthdayRule(today)
	custom := customDateRule(today)
	dayFirst, monthFirst := bday, bday
	dayFirst.order, monthFirst.order = orderDayFirst, orderMonthFirst
	cases := []struct {
		name    string
		in      string
		rule    dateRule
		want    string
		wantErr string
	}{
		{"dd.mm.yyyy", "17.05.1985", bday, "1985-05-17", ""},
		{"d.m.yyyy", "7.5.1985", bday, "1985-05-07", ""},
		{"d.m.yy 20th century", "17.5.85", bday, "1985-05-17", ""},
		{"d.m.yy this century", "3.1.09", bday, "2009-01-03", ""},
		{"birthday yy in the future is last century", "1.1.30", bday, "1930-01-01", ""},
		{"custom date yy near future", "31.12.30", custom, "2030-12-31", ""},
		{"custom date yy far past", "1.1.50", custom, "1950-01-01", ""},
		{"yyyy-mm-dd", "1985-05-17", bday, "1985-05-17", ""},
		{"yyyy-m-d", "1985-5-7", bday, "1985-05-07", ""},
		{"ISO with time", "1985-05-17T00:00:00Z", bday, "1985-05-17", ""},
		{"ISO with space time", "1985-05-17 00:00:00", bday, "1985-05-17", ""},
		{"ISO with offset", "1985-05-17T00:00:00+02:00", bday, "1985-05-17", ""},
		{"dd.mm.yyyy with time", "17.05.1985 12:30", bday, "1985-05-17", ""},
		{"dd/mm/yyyy in a day-first column", "05/04/2020", dayFirst, "2020-04-05", ""},
		{"d/m/yy in a day-first column", "5/4/20", dayFirst, "2020-04-05", ""},
		{"m/d/yyyy in a month-first column", "3/4/1990", monthFirst, "1990-03-04", ""},
		{"ambiguous in an undecided column", "05/04/2020", bday, "", "could be day-first or month-first"},
		{"a day over 12 decides by itself", "17/05/1985", bday, "1985-05-17", ""},
		{"a day equal to its month reads the same", "05/05/1985", bday, "1985-05-05", ""},
		{"year first with slashes", "1985/05/17", bday, "1985-05-17", ""},
		{"dashes day first", "17-05-1985", bday, "1985-05-17", ""},
		{"month 17 in a day-first column", "05/17/1985", dayFirst, "", "no month 17"},
		{"leap day", "29.02.2000", bday, "2000-02-29", ""},
		{"Excel serial", "31184", bday, "1985-05-17", ""},
		{"Excel serial with time fraction", "31184.75", bday, "1985-05-17", ""},
		{"Excel serial with comma fraction", "31184,5", bday, "1985-05-17", ""},
		{"Excel serial before the phantom leap day", "59", custom, "1900-02-28", ""},
		{"Excel serial after the phantom leap day", "61", custom, "1900-03-01", ""},
		{"Excel serial 1", "1", custom, "1900-01-01", ""},
		{"Excel phantom 29 Feb 1900", "60", custom, "", "does not exist"},
		{"a year alone", "1985", bday, "", "a year or an Excel day number"},
		{"no year", "17.05", bday, "", "has no year"},
		{"Mailchimp month/day", "05/17", bday, "", "has no year"},
		{"Google Contacts without a year", "--05-17", bday, "", "has no year"},
		{"American month first", "05/17/1985", bday, "1985-05-17", ""},
		{"not a calendar day", "31.04.1990", bday, "", "not a day of the calendar"},
		{"not a leap year", "29.02.1900", custom, "", "not a day of the calendar"},
		{"month 13", "1985-13-01", bday, "", "no month 13"},
		{"day 0", "00.05.1985", bday, "", "not a day of the calendar"},
		{"birthday in the future", "01.01.2030", bday, "", "in the future"},
		{"birthday before 1900", "01.01.1899", bday, "", "before 1900-01-01"},
		{"custom date far future ok", "01.01.2199", custom, "2199-01-01", ""},
		{"text", "seventeenth of May", bday, "", "is not a date"},
		{"three-digit year", "17.05.985", bday, "", "is not a date"},
		{"trailing junk", "17.05.1985x", bday, "", "is not a date"},
		{"mixed separators", "17.05/1985", bday, "", "is not a date"},
		{"huge serial", "99999999", custom, "", "is not a date"},
		{"negative", "-5", custom, "", "is not a date"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, msg := normDate(nil, tc.in, tc.rule)
			if tc.wantErr != "" {
				require.Contains(t, msg, tc.wantErr, "normDate(nil, %q)", tc.in)
				return
			}
			require.Empty(t, msg, "normDate(nil, %q)", tc.in)
			require.Equal(t, tc.want, got, "normDate(nil, %q)", tc.in)
		})
	}
}

func TestNormYesNo(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"ja", "Ja", "JA", "j", "yes", "Yes", "y", "1", "true", "TRUE", "sant", "x", "X"} {
		got, msg := normYesNo(in)
		require.Empty(t, msg, "normYesNo(%q)", in)
		require.Equal(t, ConsentYes, got, "normYesNo(%q)", in)
	}
	for _, in := range []string{"nei", "Nei", "n", "no", "NO", "0", "false", "False", "usant"} {
		got, msg := normYesNo(in)
		require.Empty(t, msg, "normYesNo(%q)", in)
		require.Equal(t, ConsentNo, got, "normYesNo(%q)", in)
	}
	for _, in := range []string{"kanskje", "maybe", "2", "-", "jaa", "o"} {
		_, msg := normYesNo(in)
		require.Contains(t, msg, "neither yes nor no", "normYesNo(%q)", in)
	}
}

func TestNormGender(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"M": GenderMale, "mann": GenderMale, "Male": GenderMale, "MAN": GenderMale, "gutt": GenderMale,
		"K": GenderFemale, "kvinne": GenderFemale, "F": GenderFemale, "Female": GenderFemale, "Woman": GenderFemale,
		"annet": GenderOther, "Other": GenderOther, "ikke-binær": GenderOther, "non-binary": GenderOther,
		"ukjent": "", "Unknown": "", "-": "", "N/A": "", "Vil ikke oppgi": "",
	}
	for in, want := range cases {
		got, msg := normGender(in)
		require.Empty(t, msg, "normGender(%q)", in)
		require.Equal(t, want, got, "normGender(%q)", in)
	}
	for _, in := range []string{"helicopter", "3", "mm"} {
		_, msg := normGender(in)
		require.Contains(t, msg, "not a gender", "normGender(%q)", in)
	}
}

func TestNormStatus(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		// Active asks for nothing: a source value never asks for activation.
		"active": "", "Aktiv": "", "subscribed": "", "påmeldt": "",
		"unsubscribed": "unsubscribed", "Avmeldt": "unsubscribed", "avregistrert": "unsubscribed", "opted out": "unsubscribed",
		"bounce": "bounce", "Bounced": "bounce", "cleaned": "bounce", "returnert": "bounce",
	}
	for in, want := range cases {
		got, msg := normStatus(in)
		require.Empty(t, msg, "normStatus(%q)", in)
		require.Equal(t, want, got, "normStatus(%q)", in)
	}
	for in, wantErr := range map[string]string{"reactivate": "constant", "pending": "never confirmed", "lead": "not a status"} {
		_, msg := normStatus(in)
		require.Contains(t, msg, wantErr, "normStatus(%q)", in)
	}
}

func TestNormNumber(t *testing.T) {
	t.Parallel()
	ok := map[string]string{
		"42":           "42",
		"-7":           "-7",
		"+7":           "7",
		"12,5":         "12.5",
		"12.5":         "12.5",
		"1 234,50":     "1234.50",
		"1.234,50":     "1234.50",
		"1,234.50":     "1234.50",
		"1.234.567":    "1234567",
		"1,234,567":    "1234567",
		"1 234 567":    "1234567",
		"1'234'567.25": "1234567.25",
		"0,5":          "0.5",
		"- 3":          "-3",
	}
	for in, want := range ok {
		got, msg := normNumber(in)
		require.Empty(t, msg, "normNumber(%q)", in)
		require.Equal(t, want, got, "normNumber(%q)", in)
	}
	for _, in := range []string{"abc", "12a", "1e5", "1,2,3", "1.23.4", "12.", ",5", "-", "+", "1-2", "1,234,56.7", "1.2,3.4", "NaN", "Inf", "0x10", strings.Repeat("9", 70)} {
		_, msg := normNumber(in)
		require.NotEmpty(t, msg, "normNumber(%q) accepted", in)
	}
}

func TestMatchChoice(t *testing.T) {
	t.Parallel()
	choices := []string{"Ski", "Fotball", "Håndball"}
	got, ok := matchChoice("ski", choices)
	require.True(t, ok)
	require.Equal(t, "Ski", got)
	got, ok = matchChoice("HÅNDBALL", choices)
	require.True(t, ok)
	require.Equal(t, "Håndball", got)
	_, ok = matchChoice("Handball", choices)
	require.False(t, ok, "accents are significant in choices")
}

// civilFromDays must agree with the calendar of package time for every Excel day number.
func TestCivilFromDays(t *testing.T) {
	t.Parallel()
	epoch := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	for z := -25568; z <= 3_000_000; z++ {
		y, m, d := epoch.AddDate(0, 0, z).Date()
		if got, want := civilFromDays(z), (civil{y, int(m), d}); got != want {
			t.Fatalf("civilFromDays(%d) = %v, want %v", z, got, want)
		}
	}
}
