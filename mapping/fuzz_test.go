package mapping

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

var fuzzHeader = []string{"E-post", "Fornavn", "Mobil", "Født", "Kjønn", "Nyhetsbrev", "Status", "Grupper",
	"Medlemsnr", "Innmeldt", "Medlemstype", "Interesser", "Kilde"}

const fuzzSpec = `
[columns]
"E-post"      = "email"
"Fornavn"     = "firstname"
"Mobil"       = "phone"
"Født"        = "birthday"
"Kjønn"       = "gender"
"Nyhetsbrev"  = "SAMTYKKEEPOST"
"Status"      = "status"
"Grupper"     = { to = "tags", separator = ";" }
"Medlemsnr"   = "custom:Medlemsnummer"
"Innmeldt"    = "custom:Innmeldt"
"Medlemstype" = "custom:Medlemstype"
"Interesser"  = "custom:Interesser"
"Kilde"       = "custom:Kilde"
`

var rejectCodes = []string{CodeMissingEmail, CodeInvalidEmail, CodeInvalidPhone, CodeInvalidDate, CodeInvalidNumber,
	CodeInvalidChoice, CodeInvalidConsent, CodeInvalidGender, CodeInvalidStatus, CodeInvalidEncoding, CodeTooLong}

// FuzzMap feeds arbitrary records through a mapping that uses every kind of target. Map must
// never panic; a payload it returns must hold only normalised, valid values (mapping them
// again gives the same payload), and a reject must carry a known code and a short value.
func FuzzMap(f *testing.F) {
	f.Add("Kari.Nordmann@Example.NO", " Kari ", "912 34 567", "17.05.1985", "K", "ja", "", "VIP;Kunde", "1 234,5", "2020-01-31", "gull", "ski,fotball", "Messe")
	f.Add("ola@example.no", "Ola\u00a0\u00a0Nordmann", "+46 70 123 45 67", "31184", "mann", "nei", "avmeldt", "", "-7", "44197", "Sølv", "", "")
	f.Add("åse@bø.no", "A\u030ase", "0047 41234567", "3.1.09", "", "x", "bounce", ";;", "1.234.567", "1.1.30", "", "Håndball", strings.Repeat("k", 300))
	f.Add("", "", "", "", "", "", "", "", "", "", "", "", "")
	f.Add("a@b", "\xff", "abc", "29.02.1900", "?", "kanskje", "pending", `"x","y"`, "1e5", "--05-17", "Platina", "Golf", "\x00")
	f.Add("a@b.no", strings.Repeat("ø", 101), "+44 (0)20 7946 0000", "05/17", "unknown", "TRUE", "reactivate", strings.Repeat("t", 101), "12.", "99999999", "GULL", "SKI, ski", "\u2028")
	f.Add(" @ ", "\ufeff", "++47", "1985-13-01T00:00:00Z", "X", "0", "Active", "a;a;b", ",5", "0", "gull ", ",,", "\t")
	m := mustCompile(f, fuzzSpec, fuzzHeader, testFields())
	f.Fuzz(func(t *testing.T, email, first, phone, born, gender, consent, status, tags, number, date, choice, multi, text string) {
		rec := sources.Record{Ordinal: 1, Line: 2, Values: []string{email, first, phone, born, gender, consent, status, tags, number, date, choice, multi, text}}
		row, rej := m.Map(rec)
		if rej != nil {
			checkReject(t, rej)
			return
		}
		checkRow(t, row)
		// Mapping the payload's own values again changes nothing.
		f := row.Sub.Field
		again, rej := m.Map(sources.Record{Values: []string{row.Sub.Email, row.Sub.Firstname, row.Sub.Phone, row.Sub.Birthday,
			row.Sub.Gender, f(sink.ConsentEmail), row.Status, strings.Join(row.Sub.Tags, ";"), f("EXTRA1"), f("EXTRA5"), f("EXTRA4"), f("EXTRA3"), f("EXTRA6")}})
		if rej != nil {
			t.Fatalf("mapping a payload's own values: %v; payload %+v", rej, row.Sub)
		}
		if got, want := string(again.Sub.AppendJSON(nil)), string(row.Sub.AppendJSON(nil)); got != want {
			t.Fatalf("mapping a payload again: got %s, want %s", got, want)
		}
	})
}

func checkReject(t *testing.T, rej *Reject) {
	t.Helper()
	if !slices.Contains(rejectCodes, rej.Code) {
		t.Fatalf("unknown reject code %q", rej.Code)
	}
	if rej.Column == "" || rej.Message == "" || rej.Line != 2 || rej.Ordinal != 1 {
		t.Fatalf("reject without its position or message: %+v", rej)
	}
	if !utf8.ValidString(rej.Value) || utf8.RuneCountInString(rej.Value) > maxRejectValue {
		t.Fatalf("reject value not shortened valid text: %q", rej.Value)
	}
	if _, err := json.Marshal(rej); err != nil {
		t.Fatalf("reject does not encode: %v", err)
	}
}

func checkRow(t *testing.T, row Row) {
	t.Helper()
	s := row.Sub
	js := s.AppendJSON(nil)
	if !json.Valid(js) {
		t.Fatalf("payload is not JSON: %q", js)
	}
	if _, msg := normEmail(nil, s.Email); msg != "" || s.Email != strings.ToLower(s.Email) {
		t.Fatalf("invalid e-mail in a payload: %q (%s)", s.Email, msg)
	}
	for _, v := range []string{s.Email, s.Firstname, s.Phone, s.Birthday, s.Gender} {
		if c, ok := clean(v); !ok || c != v {
			t.Fatalf("value not clean: %q", v)
		}
	}
	if utf8.RuneCountInString(s.Firstname) > MaxName {
		t.Fatalf("first name over its limit: %d characters", utf8.RuneCountInString(s.Firstname))
	}
	if s.Phone != "" && (s.Phone[0] != '+' || len(s.Phone) > 16 || strings.Trim(s.Phone[1:], "0123456789") != "") {
		t.Fatalf("phone not E.164: %q", s.Phone)
	}
	for _, d := range []string{s.Birthday, s.Field("EXTRA5")} {
		if d == "" {
			continue
		}
		if _, err := time.Parse(time.DateOnly, d); err != nil {
			t.Fatalf("date not YYYY-MM-DD: %q", d)
		}
	}
	if s.Birthday > "2025-06-15" {
		t.Fatalf("birthday in the future: %q", s.Birthday)
	}
	if !slices.Contains([]string{"", GenderMale, GenderFemale, GenderOther}, s.Gender) {
		t.Fatalf("gender not normalised: %q", s.Gender)
	}
	if v := s.Field(sink.ConsentEmail); v != "" && v != ConsentYes && v != ConsentNo {
		t.Fatalf("consent not normalised: %q", v)
	}
	if !slices.Contains([]string{"", sink.StatusActive, sink.StatusUnsubscribed, sink.StatusBounce}, row.Status) {
		t.Fatalf("status not normalised: %q", row.Status)
	}
	for _, tag := range s.Tags {
		if tag == "" || utf8.RuneCountInString(tag) > MaxTag || strings.Contains(tag, ";") {
			t.Fatalf("bad tag %q", tag)
		}
	}
	for i, f := range s.Fields {
		if f.Value == "" {
			t.Fatalf("empty value sent for %s", f.Name)
		}
		if i > 0 && s.Fields[i-1].Name >= f.Name {
			t.Fatalf("fields not in name order, or a name twice: %v", s.Fields)
		}
	}
}

// FuzzAsIs checks the short cut of applyAsIs against the full path: a value it maps without
// cleaning must come out exactly as applyClean maps it.
func FuzzAsIs(f *testing.F) {
	for _, v := range []string{"Kari@Example.NO", " a@b.no ", "912 34 567", "+44 (0)20 7946 0000", "912  34\t567",
		"17.05.1985", " 1985-05-17 ", "1985-05-17  10:00", "31184", "ja", "JA", "✓", "1 234,5", "12", "x\u00a0", "a@b.no\u00a0"} {
		f.Add(v)
	}
	m := mustCompile(f, fuzzSpec, fuzzHeader, testFields())
	f.Fuzz(func(t *testing.T, raw string) {
		for i := range m.ops {
			o := &m.ops[i]
			var fast Row
			fast.Sub.Fields = slices.Clone(m.fields)
			if !m.applyAsIs(&Arena{}, &fast, o, raw) { // and its values in an Arena
				continue
			}
			var full Row
			full.Sub.Fields = slices.Clone(m.fields)
			if rej := m.applyClean(nil, &full, o, &sources.Record{}, raw); rej != nil {
				t.Fatalf("%s: %q maps as it is, but cleaned it is rejected: %v", o.column, raw, rej)
			}
			require.Equal(t, full, fast, "%s: %q", o.column, raw)
		}
	})
}

// FuzzClean checks clean, and its short cuts for common values, against its definition:
// runs of blanks become one space, none at the ends, then NFC; invalid UTF-8 is refused.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"Per  Olav", " Per   Olav ", "Åse  Ærø", "a  b\tc", "a  \u00a0b", "a  e\u0301",
		"a  \xff", "a  \xc3", "  ", "a \u200b b", "Ola\x00Nordmann", "x  y  z", "A\u030Ase"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := cleanIn(&Arena{}, s)
		if !utf8.ValidString(s) {
			require.False(t, ok, "%q is not UTF-8", s)
			return
		}
		require.True(t, ok, "%q", s)
		require.Equal(t, norm.NFC.String(strings.Join(strings.FieldsFunc(s, isBlank), " ")), got, "%q", s)
	})
}

// FuzzPhoneDigits checks phoneDigits' one-pass common case against the byte-by-byte
// phoneDigitsSlow: both give the same digits, "+" and message for any value.
func FuzzPhoneDigits(f *testing.F) {
	for _, s := range []string{"912 34 567", "+47 912 34 567", "0047-912.34/567", "+44 (0)20 7946 0000", "++47",
		"+", "", " ", "9+1", "12345678901234567890123", "123456789012345678901234", "1234567890123456789012345",
		"+123456789012345678901234", "912 34 567 ext 2", "tlf 912", "(0)912", "912	34"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var fastBuf, slowBuf [24]byte
		d, intl, msg := phoneDigits(&fastBuf, s)
		wd, wintl, wmsg := phoneDigitsSlow(&slowBuf, s)
		require.Equal(t, wmsg, msg, "%q", s)
		if msg == "" {
			require.Equal(t, string(wd), string(d), "%q", s)
			require.Equal(t, wintl, intl, "%q", s)
		}
	})
}

// FuzzPlainEmail checks normEmail's one-pass path against its rules one by one: an address
// plainEmail accepts passes every check, and comes out lower-cased.
func FuzzPlainEmail(f *testing.F) {
	for _, s := range []string{"kontakt1@example.com", "Ola.Nordmann@Example.NO", "a@b.no", "a@b.n", "a@b.12",
		"a@b", ".a@b.no", "a.@b.no", "a..b@c.no", "a@-b.no", "a@b-.no", "a@b..no", "a@.b.no", "a@b.no.",
		"a@@b.no", "a@b@c.no", "@b.no", "a@", "a b@c.no", "a@b_c.no", "{a}|~@x-1.y2.z3", "a@b.c-d",
		"a@" + strings.Repeat("b", 63) + ".no", "a@" + strings.Repeat("b", 64) + ".no",
		strings.Repeat("a", 64) + "@b.no", strings.Repeat("a", 65) + "@b.no",
		strings.Repeat("a", 64) + "@" + strings.Repeat(strings.Repeat("b", 62)+".", 3) + "no",
		"ø@bø.no", "a@xn--b-5ga.no", "a@[1.2.3.4]", "a\"b@c.no", "Åse.Ærø@Bø.NO", "a@b.ø", "a@b.øø", "a@ø.no",
		"×@b.no", "a÷b@c.no", "ÿß@b.no", "a@b.Ø", "a\xc3@b.no", "a@b\xc3.no", "ø" + strings.Repeat("a", 63) + "@b.no"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		plain, upper := plainEmail(s)
		if !plain {
			return
		}
		require.Empty(t, checkEmail(lower(s)), "plainEmail accepts %q", s)
		require.Equal(t, lower(s) != s, upper, "upper case in %q", s)
		got, msg := normEmail(nil, s)
		require.Empty(t, msg)
		require.Equal(t, lower(s), got)
	})
}

// FuzzParseSpec feeds arbitrary TOML to ParseSpec: it must never panic, and a spec it accepts
// must compile or fail with a *SpecError, never anything else.
func FuzzParseSpec(f *testing.F) {
	f.Add(fuzzSpec)
	f.Add(fullSpec)
	f.Add(customSpec)
	f.Add("[mapping]\ncolumns = { A = \"email\" }\nconstants = { status = \"reactivate\" }\n")
	f.Add("columns = { A = { to = 5 } }\ntags = [1]\nduplicates = true\n")
	f.Add("columns = { A = { custom = \"\", choices = [\"a\", 2] } }\n")
	f.Fuzz(func(t *testing.T, data string) {
		spec, err := ParseSpec([]byte(data))
		if err != nil {
			return
		}
		_, err = compile(spec, fuzzHeader, testFields(), testToday)
		var se *SpecError
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("compile: got %T %v, want a *SpecError", err, err)
		}
	})
}
