package mapping

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// Header sets as the tools export them.
var (
	googleContactsHeader = []string{"First Name", "Middle Name", "Last Name", "Phonetic First Name", "Phonetic Middle Name",
		"Phonetic Last Name", "Name Prefix", "Name Suffix", "Nickname", "File As", "Organization Name", "Organization Title",
		"Organization Department", "Birthday", "Notes", "Photo", "Labels", "E-mail 1 - Label", "E-mail 1 - Value",
		"E-mail 2 - Label", "E-mail 2 - Value", "Phone 1 - Label", "Phone 1 - Value", "Address 1 - Label",
		"Address 1 - Formatted", "Address 1 - Street", "Address 1 - City", "Address 1 - PO Box", "Address 1 - Region",
		"Address 1 - Postal Code", "Address 1 - Country", "Address 1 - Extended Address"}
	googleContactsLegacyHeader = []string{"Name", "Given Name", "Additional Name", "Family Name", "Yomi Name",
		"Given Name Yomi", "Additional Name Yomi", "Family Name Yomi", "Name Prefix", "Name Suffix", "Initials", "Nickname",
		"Short Name", "Maiden Name", "Birthday", "Gender", "Location", "Billing Information", "Directory Server", "Mileage",
		"Occupation", "Hobby", "Sensitivity", "Priority", "Subject", "Notes", "Language", "Photo", "Group Membership",
		"E-mail 1 - Type", "E-mail 1 - Value", "Phone 1 - Type", "Phone 1 - Value", "Organization 1 - Type",
		"Organization 1 - Name", "Organization 1 - Yomi Name", "Organization 1 - Title"}
	mailchimpHeader = []string{"Email Address", "First Name", "Last Name", "Address", "Phone Number", "Birthday",
		"MEMBER_RATING", "OPTIN_TIME", "OPTIN_IP", "CONFIRM_TIME", "CONFIRM_IP", "LATITUDE", "LONGITUDE", "GMTOFF",
		"DSTOFF", "TIMEZONE", "CC", "REGION", "LAST_CHANGED", "LEID", "EUID", "NOTES", "TAGS"}
	norwegianHeader = []string{"Fornavn", "Etternavn", "E-post", "Mobil", "Telefon", "Adresse", "Postnummer", "Poststed",
		"Firma", "Fødselsdato", "Kjønn", "Medlemsnummer"}
)

func TestAuto(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		header       []string
		want         map[string]string
		wantUnplaced []string
	}{
		{"Google Contacts", googleContactsHeader, map[string]string{
			"First Name": "firstname", "Last Name": "lastname", "E-mail 1 - Value": "email", "Phone 1 - Value": "phone",
			"Organization Name": "company", "Birthday": "birthday", "Address 1 - Street": "address",
			"Address 1 - City": "city", "Address 1 - Postal Code": "zip",
		}, []string{"Middle Name", "Phonetic First Name", "Phonetic Middle Name", "Phonetic Last Name", "Name Prefix",
			"Name Suffix", "Nickname", "File As", "Organization Title", "Organization Department", "Notes", "Photo", "Labels",
			"E-mail 1 - Label", "E-mail 2 - Label", "Phone 1 - Label", "Address 1 - Label",
			"Address 1 - Formatted", "Address 1 - PO Box", "Address 1 - Region", "Address 1 - Country",
			"Address 1 - Extended Address"}},
		{"Google Contacts (legacy)", googleContactsLegacyHeader, map[string]string{
			"Given Name": "firstname", "Family Name": "lastname", "E-mail 1 - Value": "email", "Phone 1 - Value": "phone",
			"Organization 1 - Name": "company", "Birthday": "birthday", "Gender": "gender", "Name": "fullname",
		}, nil},
		{"Mailchimp", mailchimpHeader, map[string]string{
			"Email Address": "email", "First Name": "firstname", "Last Name": "lastname", "Address": "address",
			"Phone Number": "phone", "Birthday": "birthday", "TAGS": "tags",
		}, nil},
		{"Norwegian", norwegianHeader, map[string]string{
			"Fornavn": "firstname", "Etternavn": "lastname", "E-post": "email", "Mobil": "phone", "Adresse": "address",
			"Postnummer": "zip", "Poststed": "city", "Firma": "company", "Fødselsdato": "birthday", "Kjønn": "gender",
		}, []string{"Telefon", "Medlemsnummer"}},
		{"case, accents and punctuation", []string{"EPOST", "fornavn", "ETTER-NAVN", "Fodselsdato", "KJONN", "postnr.", "Mobiltelefon", "sted", "bedrift", "SAMTYKKEEPOST"}, map[string]string{
			"EPOST": "email", "fornavn": "firstname", "ETTER-NAVN": "lastname", "Fodselsdato": "birthday", "KJONN": "gender",
			"postnr.": "zip", "Mobiltelefon": "phone", "sted": "city", "bedrift": "company", "SAMTYKKEEPOST": "SAMTYKKEEPOST",
		}, nil},
		{"the first of two e-mail columns", []string{"Email", "E-post", "Navn"}, map[string]string{"Email": "email", "Navn": "fullname"}, nil}, // E-post: a fallback
		{"a status column is never guessed", []string{"E-mail", "Status"}, map[string]string{"E-mail": "email"}, []string{"Status"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, unplaced := Auto(tc.header)
			got := map[string]string{}
			for col, c := range spec.Columns {
				got[col] = targetString(c)
			}
			require.Equal(t, tc.want, got)
			if tc.wantUnplaced != nil {
				require.Equal(t, tc.wantUnplaced, unplaced)
			}
			fallbacks := 0
			for _, c := range spec.Columns {
				fallbacks += len(c.Fallback)
			}
			require.Len(t, unplaced, len(tc.header)-len(tc.want)-fallbacks, "every column is placed or reported")
			m, err := compile(spec, tc.header, Fields{}, testToday)
			require.NoError(t, err, "an auto mapping compiles")
			require.Equal(t, unplaced, m.Unplaced())
		})
	}
}

// The three header sets map e-mail and names with no hand-written mapping, end to end.
func TestAutoMapsRealExports(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		header []string
		cells  map[string]string
	}{
		{"Google Contacts", googleContactsHeader, map[string]string{"First Name": "Ola", "Last Name": "Nordmann", "E-mail 1 - Value": "Ola@Example.no", "E-mail 2 - Value": "ola@work.no", "Labels": "* myContacts ::: Venner"}},
		{"Google Contacts (legacy)", googleContactsLegacyHeader, map[string]string{"Given Name": "Ola", "Family Name": "Nordmann", "E-mail 1 - Value": "ola@example.no"}},
		{"Mailchimp", mailchimpHeader, map[string]string{"Email Address": "ola@example.no", "First Name": "Ola", "Last Name": "Nordmann", "TAGS": `"Kunde","VIP"`}},
		{"Norwegian", norwegianHeader, map[string]string{"E-post": "ola@example.no", "Fornavn": "Ola", "Etternavn": "Nordmann", "Mobil": "912 34 567", "Kjønn": "mann"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, _ := Auto(tc.header)
			m, err := compile(spec, tc.header, Fields{}, testToday)
			require.NoError(t, err)
			values := make([]string, len(tc.header))
			for i, h := range tc.header {
				values[i] = tc.cells[h]
			}
			row, rej := m.Map(sources.Record{Line: 2, Values: values})
			require.Nil(t, rej)
			require.Equal(t, "ola@example.no", row.Sub.Email)
			require.Equal(t, "Ola", row.Sub.Firstname)
			require.Equal(t, "Nordmann", row.Sub.Lastname)
			if tc.name == "Mailchimp" {
				require.Equal(t, []string{"Kunde", "VIP"}, row.Sub.Tags)
			}
			if tc.name == "Norwegian" {
				require.Equal(t, "+4791234567", row.Sub.Phone)
				require.Equal(t, GenderMale, row.Sub.Gender)
			}
		})
	}
}

func TestSpecWithAuto(t *testing.T) {
	t.Parallel()
	header := []string{"E-post", "Fornavn", "Notat", "Intern"}
	spec, unplaced := Spec{Duplicates: DuplicatesFirst, Ignore: []string{"Intern"}}.WithAuto(header)
	require.Equal(t, DuplicatesFirst, spec.Duplicates)
	require.Equal(t, map[string]Column{"E-post": {To: sink.FieldEmail}, "Fornavn": {To: sink.FieldFirstname}}, spec.Columns)
	require.Equal(t, []string{"Notat"}, unplaced)

	given := Spec{Columns: map[string]Column{"E-post": {To: sink.FieldEmail}}, NoAuto: true}
	same, unplaced := given.WithAuto(header)
	require.Equal(t, given, same)
	require.Nil(t, unplaced)
}

// TestPartialColumnsAutoMapsTheRest: a [columns] table that names some columns gets the
// others mapped by their names, but never to a target it fills itself, and not the columns
// it ignores; auto = false maps only what it names.
func TestPartialColumnsAutoMapsTheRest(t *testing.T) {
	t.Parallel()
	header := []string{"Mail", "E-post", "Fornavn", "Etternavn", "Mobil", "Telefon", "Notat", "Intern", "Firma"}
	spec, err := ParseSpec([]byte(`ignore = ["Intern"]
[columns]
Mail = "email"
Telefon = "phone"
[constants]
company = "Acme AS"
`))
	require.NoError(t, err)
	got, unplaced := spec.WithAuto(header)
	require.Equal(t, map[string]Column{
		"Mail":      {To: sink.FieldEmail},
		"Telefon":   {To: sink.FieldPhone},
		"Fornavn":   {To: sink.FieldFirstname},
		"Etternavn": {To: sink.FieldLastname},
	}, got.Columns)
	// E-post, Mobil and Firma would fill targets the mapping fills itself; Notat has no name
	// the auto-mapper knows.
	require.Equal(t, []string{"E-post", "Mobil", "Notat", "Firma"}, unplaced)

	m, err := Compile(got, header, Fields{})
	require.NoError(t, err)
	row, rej := m.Map(sources.Record{Line: 2, Values: []string{"kari@example.no", "", "Kari", "Nordmann", "", "+47 22 33 44 55", "x", "y", "Z AS"}})
	require.Nil(t, rej)
	require.Equal(t, "Kari", row.Sub.Firstname)
	require.Equal(t, "Nordmann", row.Sub.Lastname)
	require.Equal(t, "Acme AS", row.Sub.Company)
	require.Equal(t, []string{"E-post", "Mobil", "Notat", "Firma"}, m.Unplaced())

	// The e-mail named by the mapping under another name: the export's address columns stay
	// unplaced, the rest is mapped.
	spec, err = ParseSpec([]byte(`[columns]
"E-post" = { to = "email", fallback = ["E-post 2-adresse"] }
`))
	require.NoError(t, err)
	got, unplaced = spec.WithAuto([]string{"E-post", "E-post 2-adresse", "E-post 3-adresse", "Fornavn"})
	require.Equal(t, map[string]Column{
		"E-post":  {To: sink.FieldEmail, Fallback: []string{"E-post 2-adresse"}},
		"Fornavn": {To: sink.FieldFirstname},
	}, got.Columns)
	require.Equal(t, []string{"E-post 3-adresse"}, unplaced)

	spec, err = ParseSpec([]byte(`auto = false
[columns]
Mail = "email"
`))
	require.NoError(t, err)
	require.True(t, spec.NoAuto)
	got, unplaced = spec.WithAuto(header)
	require.Equal(t, map[string]Column{"Mail": {To: sink.FieldEmail}}, got.Columns)
	require.Nil(t, unplaced)
	require.Contains(t, string(spec.TOML("")), "auto = false\n")
	back, err := ParseSpec(spec.TOML(""))
	require.NoError(t, err)
	require.Equal(t, spec, back)
}
