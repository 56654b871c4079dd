package mapping

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// TestEmailFallbackColumns: a mapping names fallback columns for the e-mail; the first valid
// address of the column and its fallbacks is sent, with a warning for an invalid one passed
// over; only when none has one is the row rejected.
func TestEmailFallbackColumns(t *testing.T) {
	t.Parallel()
	header := []string{"E-mail Address", "E-mail 2 Address", "E-mail 3 Address", "Mobil"}
	m := mustCompile(t, `
[columns]
"E-mail Address" = { to = "email", fallback = ["E-mail 2 Address", "E-mail 3 Address"] }
Mobil = "phone"
`, header, Fields{})
	require.Equal(t, []string{"email", TargetEmailFallback, TargetEmailFallback, "phone"},
		[]string{m.Plan()[0].Target, m.Plan()[1].Target, m.Plan()[2].Target, m.Plan()[3].Target})
	cases := []struct {
		name      string
		cells     []string
		want      string
		warnCodes []string
		rejCode   string
	}{
		{"the first column wins", []string{"a@x.no", "b@y.no", "", ""}, "a@x.no", nil, ""},
		{"only a second address", []string{"", "Kari@Y.no", "", ""}, "kari@y.no", nil, ""},
		{"only a third address", []string{"", "", "c@z.no", ""}, "c@z.no", nil, ""},
		{"an invalid first is passed over", []string{"not-an-address", "", "c@z.no", ""}, "c@z.no", []string{CodeInvalidEmail}, ""},
		{"no address anywhere", []string{"", "", "", ""}, "", nil, CodeMissingEmail},
		{"only invalid ones", []string{"", "bad", "worse", ""}, "", nil, CodeInvalidEmail},
	}
	for _, tc := range cases {
		var row Row
		var warns []Reject
		rej := m.MapWarn(nil, &sources.Record{Line: 2, Values: tc.cells}, &row, &warns)
		if tc.rejCode != "" {
			require.NotNil(t, rej, tc.name)
			require.Equal(t, tc.rejCode, rej.Code, tc.name)
			continue
		}
		require.Nil(t, rej, tc.name)
		require.Equal(t, tc.want, row.Sub.Email, tc.name)
		var codes []string
		for _, w := range warns {
			codes = append(codes, w.Code)
		}
		require.Equal(t, tc.warnCodes, codes, tc.name)
	}
	var row Row
	rej := m.MapWarn(nil, &sources.Record{Line: 2, Values: []string{"", "", "", ""}}, &row, nil)
	require.Equal(t, `the row has no e-mail address (in "E-mail Address" or "E-mail 2 Address" or "E-mail 3 Address")`, rej.Message)
	var warns []Reject
	require.Nil(t, m.MapWarn(nil, &sources.Record{Line: 2, Values: []string{"x", "", "c@z.no", ""}}, &row, &warns))
	require.Equal(t, "E-mail Address", warns[0].Column)
	require.Contains(t, warns[0].Message, `the address in "E-mail 3 Address" was sent instead`)

	_, err := ParseSpec([]byte("[columns]\nNavn = { to = \"firstname\", fallback = [\"X\"] }\n"))
	require.ErrorContains(t, err, "fallback columns belong to the email column only")
	_, err = compile(Spec{Columns: map[string]Column{"E-mail Address": {To: "email", Fallback: []string{"Nope"}}}}, header, Fields{}, testToday)
	require.ErrorContains(t, err, `columns."E-mail Address".fallback: the source has no column "Nope"`)
	_, err = compile(Spec{Columns: map[string]Column{"E-mail Address": {To: "email", Fallback: []string{"Mobil"}}, "Mobil": {To: "phone"}}}, header, Fields{}, testToday)
	require.ErrorContains(t, err, `already mapped`)
}

// TestEmailCellWithSeveralAddresses: a cell with several addresses (Google's " ::: ", a
// semicolon, a comma) sends its first valid one and warns.
func TestEmailCellWithSeveralAddresses(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "[columns]\nE-post = \"email\"\n", []string{"E-post"}, Fields{})
	for _, tc := range []struct{ cell, want string }{
		{"a@x.no ::: b@y.no", "a@x.no"},
		{"a@x.no; b@y.no", "a@x.no"},
		{"bad ::: B@y.no", "b@y.no"},
		{"a@x.no, b@y.no, c@z.no", "a@x.no"},
	} {
		var row Row
		var warns []Reject
		require.Nil(t, m.MapWarn(nil, &sources.Record{Line: 3, Values: []string{tc.cell}}, &row, &warns), tc.cell)
		require.Equal(t, tc.want, row.Sub.Email, tc.cell)
		require.Len(t, warns, 1, tc.cell)
		require.Equal(t, CodeMultipleEmails, warns[0].Code)
		require.Equal(t, "E-post", warns[0].Column)
	}
	_, rej := m.Map(sources.Record{Values: []string{"bad ::: worse"}})
	require.NotNil(t, rej)
	require.Equal(t, CodeInvalidEmail, rej.Code)
	require.Contains(t, rej.Message, `holds no valid address ("bad": has no @)`)
}

// TestAutoEmailFallbacks: the auto-mapper makes the other address columns of Outlook and
// Google exports fallbacks of the first.
func TestAutoEmailFallbacks(t *testing.T) {
	t.Parallel()
	for _, h := range [][]string{
		{"First Name", "E-mail Address", "E-mail Type", "E-mail 2 Address", "E-mail 3 Address"},
		{"Fornavn", "E-postadresse", "E-post 2-adresse", "E-post 3-adresse"},
		{"Name", "E-mail 1 - Value", "E-mail 2 - Value", "E-mail 3 - Value"},
	} {
		spec, unplaced := Spec{}.WithAuto(h)
		c := spec.Columns[h[1]]
		require.Equal(t, "email", c.To, h[1])
		require.Equal(t, h[len(h)-2:], c.Fallback, h[1])
		require.NotContains(t, unplaced, h[len(h)-1])
		m, err := compile(spec, h, Fields{}, testToday)
		require.NoError(t, err)
		vals := make([]string, len(h))
		vals[len(h)-1] = "third@example.no"
		row, rej := m.Map(sources.Record{Values: vals})
		require.Nil(t, rej)
		require.Equal(t, "third@example.no", row.Sub.Email)
	}
}
