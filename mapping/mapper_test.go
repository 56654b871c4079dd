package mapping

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/rejectfile"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// testToday is the date the tests compile mappings on, so birthday checks are stable.
var testToday = civil{2025, 6, 15}

func testFields() Fields {
	return NewFields([]sink.CustomField{
		{ID: 1, Label: "Medlemsnummer", Value: "EXTRA1", Datatype: sink.DatatypeNumber},
		{ID: 2, Label: "Interesser", Value: "EXTRA3", Datatype: sink.DatatypeMultipleChoice, Choices: []string{"Ski", "Fotball", "Håndball"}},
		{ID: 3, Label: "Medlemstype", Value: "EXTRA4", Datatype: sink.DatatypeSingleChoice, Choices: []string{"Gull", "Sølv", "Bronse"}},
		{ID: 4, Label: "Innmeldt", Value: "EXTRA5", Datatype: sink.DatatypeDate},
		{ID: 5, Label: "Kilde", Value: "EXTRA6", Datatype: sink.DatatypeString},
		{ID: 6, Label: "Region", Value: "EXTRA7", Datatype: sink.DatatypeDropdown},
	})
}

const fullSpec = `
default_country = "+47"
tags = ["import"]

[columns]
"E-post"        = "email"
"Fornavn"       = "firstname"
"Etternavn"     = "lastname"
"Adresse"       = "address"
"Postnr"        = "zip"
"Sted"          = "city"
"Mobil"         = "phone"
"Firma"         = "company"
"Født"          = "birthday"
"Kjønn"         = "gender"
"Nyhetsbrev"    = "SAMTYKKEEPOST"
"SMS"           = "SAMTYKKESMS"
"Status"        = "status"
"Grupper"       = { to = "tags", separator = ";" }
"Medlemsnummer" = "custom:Medlemsnummer"
"Interesser"    = { custom = "Interesser", separator = "|" }
"Medlemstype"   = "custom:Medlemstype"
"Innmeldt"      = "custom:Innmeldt"
"Kilde"         = "custom:kilde"
"Region"        = "custom:Region"
"Notat"         = "ignore"

[constants]
PERSONVERNERKLRING = "ja"
`

var fullHeader = []string{"E-post", "Fornavn", "Etternavn", "Adresse", "Postnr", "Sted", "Mobil", "Firma", "Født", "Kjønn",
	"Nyhetsbrev", "SMS", "Status", "Grupper", "Medlemsnummer", "Interesser", "Medlemstype", "Innmeldt", "Kilde", "Region", "Notat", "Ekstra"}

func mustCompile(t testing.TB, specTOML string, header []string, fields Fields) *Mapper {
	t.Helper()
	spec, err := ParseSpec([]byte(specTOML))
	require.NoError(t, err)
	m, err := compile(spec, header, fields, testToday)
	require.NoError(t, err)
	return m
}

// fullRecord returns a valid record of fullHeader with the given cells changed.
func fullRecord(change map[string]string) sources.Record {
	base := map[string]string{
		"E-post": " Kari.Nordmann@Example.NO ", "Fornavn": "Kari", "Etternavn": "Nordmann", "Adresse": "Storgata  1",
		"Postnr": "0155", "Sted": "Oslo", "Mobil": "912 34 567", "Firma": "Acme AS", "Født": "17.05.1985",
		"Kjønn": "K", "Nyhetsbrev": "ja", "SMS": "nei", "Status": "", "Grupper": "VIP; Kunde",
		"Medlemsnummer": "1 234", "Interesser": "ski|fotball", "Medlemstype": "gull", "Innmeldt": "2020-01-31",
		"Kilde": "Messe", "Region": "Øst", "Notat": "whatever", "Ekstra": "x",
	}
	for k, v := range change {
		base[k] = v
	}
	values := make([]string, len(fullHeader))
	for i, h := range fullHeader {
		values[i] = base[h]
	}
	return sources.Record{Ordinal: 7, Line: 8, Values: values}
}

func TestMapFullRow(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, fullSpec, fullHeader, testFields())
	row, rej := m.Map(fullRecord(nil))
	require.Nil(t, rej)
	want := Row{
		Ordinal: 7, Line: 8,
		Sub: sink.Subscriber{
			Email: "kari.nordmann@example.no", Firstname: "Kari", Lastname: "Nordmann", Address: "Storgata 1",
			Zip: "0155", City: "Oslo", Phone: "+4791234567", Company: "Acme AS", Birthday: "1985-05-17", Gender: GenderFemale,
			Fields: []sink.Field{ // in name order
				{Name: "EXTRA1", Value: "1234"}, {Name: "EXTRA3", Value: "Ski,Fotball"}, {Name: "EXTRA4", Value: "Gull"}, {Name: "EXTRA5", Value: "2020-01-31"}, {Name: "EXTRA6", Value: "Messe"}, {Name: "EXTRA7", Value: "Øst"},
				{Name: sink.ConsentPrivacyTerms, Value: ConsentYes}, {Name: sink.ConsentEmail, Value: ConsentYes}, {Name: sink.ConsentSMS, Value: ConsentNo},
			},
			Tags: []string{"import", "VIP", "Kunde"},
		},
		StatusMobile: sink.StatusUnsubscribed, // SAMTYKKESMS = nei
	}
	require.Equal(t, want, row)
	require.Equal(t, []string{"Ekstra"}, m.Unplaced())
}

// TestMapIntoOverwritesRow maps records one after another into one Row, as a caller that
// reuses its rows does: each result must be Map's, with nothing left over from the record
// before it, even after a reject.
func TestMapIntoOverwritesRow(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, fullSpec, fullHeader, testFields())
	sparse := map[string]string{"Fornavn": "", "Etternavn": "", "Adresse": "", "Postnr": "", "Sted": "", "Mobil": "",
		"Firma": "", "Født": "", "Kjønn": "", "Nyhetsbrev": "", "SMS": "", "Grupper": "", "Medlemsnummer": "",
		"Interesser": "", "Medlemstype": "", "Innmeldt": "", "Kilde": "", "Region": ""}
	recs := []sources.Record{
		fullRecord(nil),
		fullRecord(sparse),
		fullRecord(map[string]string{"Mobil": "12"}), // a reject, part-way through
		fullRecord(map[string]string{"Status": "bounce", "Nyhetsbrev": "nei", "Region": ""}),
		fullRecord(sparse),
	}
	var a Arena
	var row Row
	for i := range recs {
		want, wantRej := m.Map(recs[i])
		rej := m.MapInto(&a, &recs[i], &row)
		require.Equal(t, wantRej, rej, "record %d", i)
		if rej == nil {
			require.Equal(t, want, row, "record %d", i)
		}
	}
}

func TestMapConsentAndStatus(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, `
[columns]
Email = "email"
Status = "status"
Epost = "SAMTYKKEEPOST"
Sms = "SAMTYKKESMS"
Begge = "SAMTYKKEEPOSTOGSMS"
`, []string{"Email", "Status", "Epost", "Sms", "Begge"}, Fields{})
	cases := []struct {
		name                      string
		status, epost, sms, begge string
		want, wantMobile          string
	}{
		{"nothing given sends no status", "", "", "", "", "", ""},
		{"yes never sets a status", "", "ja", "yes", "1", "", ""},
		{"e-mail no unsubscribes e-mail only", "", "nei", "", "", sink.StatusUnsubscribed, ""},
		{"sms no unsubscribes sms only", "", "", "0", "", "", sink.StatusUnsubscribed},
		{"combined no counts for both", "", "", "", "false", sink.StatusUnsubscribed, sink.StatusUnsubscribed},
		{"specific yes wins over combined no", "", "ja", "", "nei", "", sink.StatusUnsubscribed},
		{"no overrides a status of active", "aktiv", "nei", "", "", sink.StatusUnsubscribed, ""},
		{"no leaves bounce", "bounce", "nei", "", "", sink.StatusBounce, ""},
		{"status column", "avmeldt", "ja", "", "", sink.StatusUnsubscribed, ""},
		{"status active sends no status", "active", "ja", "", "", "", ""},
		{"status aktiv with no consent column sends no status", "Aktiv", "", "", "", "", ""},
	}
	for _, tc := range cases {
		row, rej := m.Map(sources.Record{Line: 2, Values: []string{"a@b.no", tc.status, tc.epost, tc.sms, tc.begge}})
		require.Nil(t, rej, tc.name)
		require.Equal(t, tc.want, row.Status, "%s: Status", tc.name)
		require.Equal(t, tc.wantMobile, row.StatusMobile, "%s: StatusMobile", tc.name)
	}
}

func TestMapConstants(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, `
tags = ["nyhetsbrev", "2025"]
[columns]
Email = "email"
[constants]
company = "  Acme   AS "
status = "reactivate"
SAMTYKKEEPOST = true
"custom:Medlemstype" = "sølv"
"custom:Medlemsnummer" = 12
`, []string{"Email"}, testFields())
	row, rej := m.Map(sources.Record{Values: []string{"a@b.no"}})
	require.Nil(t, rej)
	require.Equal(t, "Acme AS", row.Sub.Company)
	require.Equal(t, sink.StatusReactivate, row.Status, "a constant may ask for reactivate")
	require.Equal(t, []sink.Field{{Name: "EXTRA1", Value: "12"}, {Name: "EXTRA4", Value: "Sølv"}, {Name: sink.ConsentEmail, Value: ConsentYes}}, row.Sub.Fields)
	require.Equal(t, []string{"nyhetsbrev", "2025"}, row.Sub.Tags)
	// Rows do not share their Fields.
	row2, _ := m.Map(sources.Record{Values: []string{"c@d.no"}})
	row2.Sub.SetField("EXTRA1", "x")
	require.Equal(t, "12", row.Sub.Field("EXTRA1"))

	// A constant status of active asks for nothing either.
	m = mustCompile(t, "[columns]\nEmail = \"email\"\n[constants]\nstatus = \"active\"\nstatus_mobile = \"aktiv\"\n", []string{"Email"}, testFields())
	row, rej = m.Map(sources.Record{Values: []string{"a@b.no"}})
	require.Nil(t, rej)
	require.Empty(t, row.Status)
	require.Empty(t, row.StatusMobile)
}

func TestMapRejects(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, fullSpec, fullHeader, testFields())
	long := strings.Repeat("å", 101)
	cases := []struct {
		name    string
		change  map[string]string
		code    string
		column  string
		value   string
		message string
	}{
		{"empty e-mail", map[string]string{"E-post": "  "}, CodeMissingEmail, "E-post", "  ", "the row has no e-mail address"},
		{"e-mail checked first", map[string]string{"E-post": "", "Mobil": "abc"}, CodeMissingEmail, "E-post", "", "no e-mail address"},
		{"bad e-mail", map[string]string{"E-post": "kari@nordmann"}, CodeInvalidEmail, "E-post", "kari@nordmann", "the e-mail address has no dot in the domain \"nordmann\""},
		{"bad phone", map[string]string{"Mobil": "12345"}, CodeInvalidPhone, "Mobil", "12345", "the phone number has 5 digits after +47, want 8"},
		{"bad birthday", map[string]string{"Født": "31.02.1985"}, CodeInvalidDate, "Født", "31.02.1985", "the birthday is not a day of the calendar"},
		{"future birthday", map[string]string{"Født": "2030-01-01"}, CodeInvalidDate, "Født", "2030-01-01", "the birthday is in the future"},
		{"bad custom date", map[string]string{"Innmeldt": "i fjor"}, CodeInvalidDate, "Innmeldt", "i fjor", "the value of \"Innmeldt\" is not a date"},
		{"long first name", map[string]string{"Fornavn": long}, CodeTooLong, "Fornavn", strings.Repeat("å", 63) + "…", "the firstname has 101 characters, more than the 100 allowed"},
		{"long zip", map[string]string{"Postnr": strings.Repeat("1", 21)}, CodeTooLong, "Postnr", strings.Repeat("1", 21), "the zip code has 21 characters, more than the 20 allowed"},
		{"long custom text", map[string]string{"Kilde": strings.Repeat("k", 256)}, CodeTooLong, "Kilde", strings.Repeat("k", 63) + "…", "the value of \"Kilde\" has 256 characters, more than the 255 allowed"},
		{"long tag", map[string]string{"Grupper": "a;" + strings.Repeat("t", 101)}, CodeTooLong, "Grupper", strings.Repeat("t", 63) + "…", "a tag has 101 characters, more than the 100 allowed"},
		{"single choice", map[string]string{"Medlemstype": "Platina"}, CodeInvalidChoice, "Medlemstype", "Platina", "the value of \"Medlemstype\" is not one of its choices (\"Gull\", \"Sølv\", \"Bronse\")"},
		{"multiple choice", map[string]string{"Interesser": "Ski|Golf"}, CodeInvalidChoice, "Interesser", "Ski|Golf", "the value of \"Interesser\" has \"Golf\", not one of its choices"},
		{"number", map[string]string{"Medlemsnummer": "12b"}, CodeInvalidNumber, "Medlemsnummer", "12b", "the value of \"Medlemsnummer\" is not a number"},
		{"consent", map[string]string{"Nyhetsbrev": "kanskje"}, CodeInvalidConsent, "Nyhetsbrev", "kanskje", "the consent SAMTYKKEEPOST is neither yes nor no"},
		{"gender", map[string]string{"Kjønn": "robot"}, CodeInvalidGender, "Kjønn", "robot", "the gender is not a gender"},
		{"status", map[string]string{"Status": "pending"}, CodeInvalidStatus, "Status", "pending", "the status is \"pending\""},
		{"encoding", map[string]string{"Sted": "Troms\xf8"}, CodeInvalidEncoding, "Sted", "Troms\uFFFD", "the city is not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			row, rej := m.Map(fullRecord(tc.change))
			require.NotNil(t, rej, "no reject; mapped to %+v", row.Sub)
			require.Equal(t, tc.code, rej.Code)
			require.Equal(t, tc.column, rej.Column)
			require.Equal(t, tc.value, rej.Value)
			require.Contains(t, rej.Message, tc.message)
			require.Equal(t, int64(7), rej.Ordinal)
			require.Equal(t, 8, rej.Line)
			require.Equal(t, Row{}, row)
			require.Contains(t, rej.Error(), "line 8 column \""+tc.column+"\": "+tc.code)
		})
	}
}

func TestMapShortRecordReadsEmptyCells(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, fullSpec, fullHeader, testFields())
	row, rej := m.Map(sources.Record{Values: []string{"a@b.no"}})
	require.Nil(t, rej)
	require.Equal(t, "a@b.no", row.Sub.Email)
	_, rej = m.Map(sources.Record{})
	require.Equal(t, CodeMissingEmail, rej.Code)
}

func TestRejectFromRowError(t *testing.T) {
	t.Parallel()
	rec := sources.Record{Ordinal: 3, Line: 9, Sheet: "Ark1", Values: []string{"a@b.no", "Ola"}}
	rej := RejectFromRowError(rec, &sources.RowError{Line: 9, Sheet: "Ark1", Column: 2, Err: errors.New("the cell cannot be decoded")})
	require.Equal(t, Reject{Ordinal: 3, Line: 9, Sheet: "Ark1", Value: "Ola", Code: CodeRowUnreadable, Message: "the cell cannot be decoded (column 2)"}, rej)
	require.Equal(t, `sheet "Ark1" row 9: row_unreadable: the cell cannot be decoded (column 2)`, rej.Error())

	m := mustCompile(t, `columns = { Email = "email", Navn = "firstname" }`, []string{"Email", "Navn"}, Fields{})
	rej = m.RejectRow(rec, &sources.RowError{Line: 9, Column: 2, Err: errors.New("bad quote")})
	require.Equal(t, "Navn", rej.Column)
	rej = RejectFromRowError(sources.Record{Ordinal: 4}, &sources.RowError{Line: 12})
	require.Equal(t, 12, rej.Line)
	require.Equal(t, "the row could not be read", rej.Message)
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	header := []string{"E-post", "Navn", "Navn2", "Medlemsnr"}
	cases := []struct {
		name    string
		spec    Spec
		header  []string
		wantErr []string
	}{
		{"column the file lacks", Spec{Columns: map[string]Column{"E-post": {To: "email"}, "Telefon": {To: "phone"}}}, header,
			[]string{`columns.Telefon: the source has no column "Telefon" (it has "E-post", "Navn", "Navn2", "Medlemsnr")`}},
		{"no e-mail column", Spec{Columns: map[string]Column{"Navn": {To: "firstname"}}}, header,
			[]string{"columns: no column is mapped to email"}},
		{"unknown target", Spec{Columns: map[string]Column{"E-post": {To: "email"}, "Navn": {To: "name"}}}, header,
			[]string{`columns.Navn: unknown target "name"`}},
		{"two columns for one field", Spec{Columns: map[string]Column{"E-post": {To: "email"}, "Navn": {To: "firstname"}, "Navn2": {To: "firstname"}}}, header,
			[]string{"columns.Navn2: firstname is already mapped by columns.Navn"}},
		{"unknown custom label", Spec{Columns: map[string]Column{"E-post": {To: "email"}, "Medlemsnr": {To: TargetCustom, Custom: "Medlemsnr"}}}, header,
			[]string{`columns.Medlemsnr: the service has no custom field "Medlemsnr" (create it, or set create_missing = true)`}},
		{"custom label not created", Spec{CreateMissing: true, Columns: map[string]Column{"E-post": {To: "email"}, "Medlemsnr": {To: TargetCustom, Custom: "Medlemsnr"}}}, header,
			[]string{`custom field "Medlemsnr" does not exist and was not created`}},
		{"datatype differs", Spec{Columns: map[string]Column{"E-post": {To: "email"}, "Medlemsnr": {To: TargetCustom, Custom: "Medlemsnummer", Datatype: sink.DatatypeString}}}, header,
			[]string{`custom field "Medlemsnummer" is number in the service, not string`}},
		{"bad constant", Spec{Columns: map[string]Column{"E-post": {To: "email"}}, Constants: map[string]string{"birthday": "soon", "phone": "123"}}, header,
			[]string{"constants.birthday: the birthday is not a date", "constants.phone: the phone number has 3 digits after +47"}},
		{"constant and column for one target", Spec{Columns: map[string]Column{"E-post": {To: "email"}, "Navn": {To: "firstname"}}, Constants: map[string]string{"firstname": "Ola"}}, header,
			[]string{"constants.firstname: firstname is already mapped by columns.Navn"}},
		{"email constant", Spec{Columns: map[string]Column{"E-post": {To: "email"}}, Constants: map[string]string{"email": "a@b.no"}}, header,
			[]string{"constants.email: email cannot be a constant"}},
		{"bad policy and country", Spec{Columns: map[string]Column{"E-post": {To: "email"}}, Duplicates: "newest", DefaultCountry: "Norway"}, header,
			[]string{`default_country: "Norway" is not a country calling code`, `duplicates: want "last", "first" or "reject", got "newest"`}},
		{"ambiguous header", Spec{Columns: map[string]Column{"email": {To: "email"}}}, []string{"Email", "EMAIL"},
			[]string{`column "email" matches both "Email" and "EMAIL"`}},
		{"two mappings of one column", Spec{Columns: map[string]Column{"E-post": {To: "email"}, "e-post": {To: "SAMTYKKEEPOST"}}}, header,
			[]string{`columns.e-post: column "E-post" is already mapped by columns.E-post`}},
		{"empty tag", Spec{Columns: map[string]Column{"E-post": {To: "email"}}, Tags: []string{" "}}, header,
			[]string{"tags[0]: a tag cannot be empty"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := compile(tc.spec, tc.header, testFields(), testToday)
			require.Nil(t, m)
			var se *SpecError
			require.True(t, errors.As(err, &se), "got %T %v, want *SpecError", err, err)
			require.Len(t, se.Problems, len(tc.wantErr), "problems: %v", err)
			for _, want := range tc.wantErr {
				require.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestCompileMatchesHeaderIgnoringCase(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, `columns = { "e-post" = "email" }`, []string{"Navn", "E-POST"}, Fields{})
	row, rej := m.Map(sources.Record{Values: []string{"Ola", "ola@example.no"}})
	require.Nil(t, rej)
	require.Equal(t, "ola@example.no", row.Sub.Email)
	require.Equal(t, []PlanEntry{{Column: "Navn", Note: "not mapped: not sent"}, {Column: "E-POST", Target: "email"}}, m.Plan())
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	header := []string{"Email", "Navn", "Tlf"}
	base := mustCompile(t, `columns = { Email = "email", Navn = "firstname" }`, header, Fields{})
	again := mustCompile(t, `columns = { Navn = "firstname", Email = "email" }`, header, Fields{})
	require.Equal(t, base.Fingerprint(), again.Fingerprint(), "same mapping, same fingerprint")
	require.Len(t, base.Fingerprint(), 32)
	moved := mustCompile(t, `columns = { Email = "email", Navn = "firstname" }`, []string{"Tlf", "Navn", "Email"}, Fields{})
	require.Equal(t, base.Fingerprint(), moved.Fingerprint(), "column positions do not matter")
	policy := mustCompile(t, `duplicates = "first"`+"\n"+`columns = { Email = "email", Navn = "firstname" }`, header, Fields{})
	require.Equal(t, base.Fingerprint(), policy.Fingerprint(), "the duplicate policy does not change payloads")

	changes := map[string]string{
		"another target":  `columns = { Email = "email", Navn = "lastname" }`,
		"another column":  `columns = { Email = "email", Navn = "firstname", Tlf = "phone" }`,
		"a constant":      `columns = { Email = "email", Navn = "firstname" }` + "\n" + `constants = { city = "Oslo" }`,
		"a tag":           `tags = ["x"]` + "\n" + `columns = { Email = "email", Navn = "firstname" }`,
		"another country": `default_country = "+46"` + "\n" + `columns = { Email = "email", Navn = "firstname" }`,
	}
	seen := map[string]string{base.Fingerprint(): "base"}
	for name, spec := range changes {
		fp := mustCompile(t, spec, header, Fields{}).Fingerprint()
		require.NotContains(t, seen, fp, "%s: fingerprint equals %s", name, seen[fp])
		seen[fp] = name
	}
	// Another slot for the same label changes payloads too.
	spec := `columns = { Email = "email", Navn = "custom:Kilde" }`
	a := mustCompile(t, spec, header, NewFields([]sink.CustomField{{Label: "Kilde", Value: "EXTRA1", Datatype: "string"}}))
	b := mustCompile(t, spec, header, NewFields([]sink.CustomField{{Label: "Kilde", Value: "EXTRA2", Datatype: "string"}}))
	require.NotEqual(t, a.Fingerprint(), b.Fingerprint())
}

func TestMapperConcurrentUse(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, fullSpec, fullHeader, testFields())
	want, rej := m.Map(fullRecord(nil))
	require.Nil(t, rej)
	done := make(chan Row, 8)
	for range 8 {
		go func() {
			var last Row
			for range 200 {
				last, _ = m.Map(fullRecord(nil))
			}
			done <- last
		}()
	}
	for range 8 {
		require.Equal(t, want, <-done)
	}
}

// TestMapExternalID: a source column (a CRM id) fills external_id, trimmed and checked for
// length like any text field.
func TestMapExternalID(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, `
[columns]
"E-post" = "email"
"CRM-id" = "external_id"
`, []string{"E-post", "CRM-id"}, Fields{})
	row, rej := m.Map(sources.Record{Ordinal: 1, Line: 2, Values: []string{"kari@example.no", " C-1001 "}})
	require.Nil(t, rej)
	require.Equal(t, "C-1001", row.Sub.ExternalID)
	require.Contains(t, string(row.Sub.AppendJSON(nil)), `"external_id":"C-1001"`)

	_, rej = m.Map(sources.Record{Ordinal: 2, Line: 3, Values: []string{"ola@example.no", strings.Repeat("9", MaxExternalID+1)}})
	require.NotNil(t, rej)
	require.Contains(t, rej.Message, "external id")
	require.Equal(t, "CRM-id", rej.Column)
}

// TestMapDropInvalidOptional: under on_invalid = "drop" (the mapping's, or a column's) an
// invalid optional value is dropped with a warning and the rest of the row is mapped; under
// the default the row is rejected. The e-mail and consents always reject.
func TestMapDropInvalidOptional(t *testing.T) {
	t.Parallel()
	bad := map[string]string{"Mobil": "12345", "Født": "31.02.1985", "Medlemsnummer": "12b", "Kilde": strings.Repeat("k", 256)}

	// The default: the row is a reject, as before.
	m := mustCompile(t, fullSpec, fullHeader, testFields())
	var warnings []Reject
	var row Row
	rej := m.MapWarn(nil, ptr(fullRecord(bad)), &row, &warnings)
	require.NotNil(t, rej)
	require.Equal(t, CodeInvalidPhone, rej.Code)
	require.Empty(t, warnings)

	// The whole mapping drops: every bad optional value is dropped, each with a warning.
	m = mustCompile(t, "on_invalid = \"drop\"\n"+fullSpec, fullHeader, testFields())
	rej = m.MapWarn(nil, ptr(fullRecord(bad)), &row, &warnings)
	require.Nil(t, rej)
	require.Equal(t, "kari.nordmann@example.no", row.Sub.Email)
	require.Equal(t, "Kari", row.Sub.Firstname)
	require.Empty(t, row.Sub.Phone)
	require.Empty(t, row.Sub.Birthday)
	require.Empty(t, row.Sub.Field("EXTRA1"))
	require.Empty(t, row.Sub.Field("EXTRA6"))
	require.Equal(t, "Gull", row.Sub.Field("EXTRA4"), "the valid custom fields are sent")
	codes := map[string]string{}
	for _, w := range warnings {
		require.Equal(t, int64(7), w.Ordinal)
		require.Equal(t, 8, w.Line)
		codes[w.Column] = w.Code
	}
	require.Equal(t, map[string]string{"Mobil": CodeInvalidPhone, "Født": CodeInvalidDate,
		"Medlemsnummer": CodeInvalidNumber, "Kilde": CodeTooLong}, codes)
	require.Equal(t, "12345", warnings[slices.IndexFunc(warnings, func(w Reject) bool { return w.Column == "Mobil" })].Value)

	// A row that is rejected all the same leaves no warnings behind.
	warnings = warnings[:0]
	bad2 := map[string]string{"Mobil": "12345", "Nyhetsbrev": "kanskje"}
	rej = m.MapWarn(nil, ptr(fullRecord(bad2)), &row, &warnings)
	require.NotNil(t, rej)
	require.Equal(t, CodeInvalidConsent, rej.Code)
	require.Empty(t, warnings)

	// MapInto drops the same values without a word.
	require.Nil(t, m.MapInto(nil, ptr(fullRecord(bad)), &row))
	require.Empty(t, row.Sub.Phone)

	// One column drops; the others reject.
	perColumn := strings.Replace(fullSpec, `"Mobil"         = "phone"`, `"Mobil"         = { to = "phone", on_invalid = "drop" }`, 1)
	m = mustCompile(t, perColumn, fullHeader, testFields())
	warnings = warnings[:0]
	require.Nil(t, m.MapWarn(nil, ptr(fullRecord(map[string]string{"Mobil": "12345"})), &row, &warnings))
	require.Empty(t, row.Sub.Phone)
	require.Len(t, warnings, 1)
	require.Equal(t, CodeInvalidPhone, warnings[0].Code)
	rej = m.MapWarn(nil, ptr(fullRecord(map[string]string{"Født": "31.02.1985"})), &row, &warnings)
	require.NotNil(t, rej)
	require.Equal(t, CodeInvalidDate, rej.Code)

	// The mapping drops, a column says reject.
	m = mustCompile(t, "on_invalid = \"drop\"\n"+strings.Replace(fullSpec, `"Mobil"         = "phone"`,
		`"Mobil"         = { to = "phone", on_invalid = "reject" }`, 1), fullHeader, testFields())
	rej = m.MapWarn(nil, ptr(fullRecord(map[string]string{"Mobil": "12345"})), &row, nil)
	require.NotNil(t, rej)
	require.Equal(t, CodeInvalidPhone, rej.Code)
}

// TestMapRejectsExport: a rejects export maps as it stands: subsync's own columns are ignored
// (and not reported as unplaced), and the formula quoting of its cells is taken away.
func TestMapRejectsExport(t *testing.T) {
	t.Parallel()
	header := append([]string{"E-post", "Fornavn", "Mobil"}, rejectfile.Columns...)
	spec, unplaced := Spec{}.WithAuto(header)
	require.Empty(t, unplaced)
	m, err := compile(spec, header, Fields{}, testToday)
	require.NoError(t, err)
	require.Empty(t, m.Unplaced())
	for _, p := range m.Plan()[3:] {
		require.Equal(t, TargetIgnore, p.Target, p.Column)
	}
	rec := sources.Record{Ordinal: 1, Line: 2, Values: []string{"ada@example.com", "'=Ada", "'+47 912 34 567",
		"rejected", "2", "Mobil", "invalid_phone", "'-"}}
	row, rej := m.Map(rec)
	require.Nil(t, rej)
	require.Equal(t, "=Ada", row.Sub.Firstname)
	require.Equal(t, "+4791234567", row.Sub.Phone)
	require.Equal(t, "'=Ada", rec.Values[1], "Map never modifies rec")
}

func ptr[T any](v T) *T { return &v }
