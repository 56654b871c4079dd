package mapping

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// TestPlaceholdersAreEmpty: the values Outlook and other exporters write for "nothing"
// (Gender "Unspecified", Birthday "0.0.00" or "0/0/00", "00.00.0000" …) leave the field
// empty instead of rejecting the row; in consent, status and key columns they stay values.
func TestPlaceholdersAreEmpty(t *testing.T) {
	t.Parallel()
	header := []string{"E-mail", "First", "Gender", "Birthday", "Phone", "Since", "Points", "Newsletter", "CRM id"}
	m := mustCompile(t, `
[columns]
"E-mail" = "email"
First = "firstname"
Gender = "gender"
Birthday = "birthday"
Phone = "phone"
Since = "custom:Innmeldt"
Points = "custom:Medlemsnummer"
Newsletter = "SAMTYKKEEPOST"
"CRM id" = "external_id"
`, header, testFields())
	for _, ph := range []string{"Unspecified", "unspecified", "0.0.00", "0/0/00", "00.00.0000", "0000-00-00",
		"0000-00-00 00:00:00", "1/1/0001", "01.01.0001", "0001-01-01T00:00:00", "N/A", "#N/A", "-", "(none)", "NULL", "Ukjent"} {
		rec := sources.Record{Line: 2, Values: []string{"a@b.no", ph, ph, ph, ph, ph, ph, "ja", "7"}}
		row, rej := m.Map(rec)
		require.Nil(t, rej, "%q", ph)
		require.Equal(t, sink.Subscriber{Email: "a@b.no", ExternalID: "7",
			Fields: []sink.Field{{Name: sink.ConsentEmail, Value: ConsentYes}}}, row.Sub, "%q", ph)
	}

	// Not placeholders: real dates and values that merely look alike.
	for _, v := range []string{"0.1.00", "1/1/2001", "10.10.1010"} {
		require.False(t, isPlaceholder(v), v)
	}
	row, rej := m.Map(sources.Record{Values: []string{"a@b.no", "Na", "", "1/1/2001", "", "", "", "", ""}})
	require.Nil(t, rej)
	require.Equal(t, "Na", row.Sub.Firstname, "a name is not a placeholder")
	require.Equal(t, "2001-01-01", row.Sub.Birthday)

	// A placeholder in a consent column is not an answer, in a key column not a key, and in
	// the e-mail column no address.
	_, rej = m.Map(sources.Record{Values: []string{"a@b.no", "", "", "", "", "", "", "Unspecified", ""}})
	require.NotNil(t, rej)
	require.Equal(t, CodeInvalidConsent, rej.Code)
	row, rej = m.Map(sources.Record{Values: []string{"a@b.no", "", "", "", "", "", "", "", "N/A"}})
	require.Nil(t, rej)
	require.Equal(t, "N/A", row.Sub.ExternalID)
	_, rej = m.Map(sources.Record{Line: 3, Values: []string{"N/A", "", "", "", "", "", "", "", ""}})
	require.NotNil(t, rej)
	require.Equal(t, CodeMissingEmail, rej.Code)
}
