package mapping

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// TestRejectListsEveryProblem: a row with a bad phone, a bad date and a bad gender is one
// reject that names all three (so a person fixes it in one go), counted once.
func TestRejectListsEveryProblem(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, fullSpec, fullHeader, testFields())
	rec := fullRecord(map[string]string{"Mobil": "12", "Født": "31.02.1987", "Kjønn": "kanskje"})
	_, rej := m.Map(rec)
	require.NotNil(t, rej)
	var codes, cols []string
	for _, f := range rej.Faults() {
		codes, cols = append(codes, f.Code), append(cols, f.Column)
	}
	require.Equal(t, []string{CodeInvalidPhone, CodeInvalidDate, CodeInvalidGender}, codes)
	require.Equal(t, []string{"Mobil", "Født", "Kjønn"}, cols)
	require.Equal(t, "31.02.1987", rej.More[0].Value)
	require.Contains(t, rej.Error(), `column "Kjønn": invalid_gender`)

	// The e-mail's problem comes first; a value on_invalid = "drop" would leave out is one of
	// the row's problems too, and no warning of a rejected row remains.
	dm := mustCompile(t, `
[columns]
"E-post" = "email"
Mobil = { to = "phone", on_invalid = "drop" }
"Født" = "birthday"
`, []string{"Mobil", "E-post", "Født"}, Fields{})
	var warnings []Reject
	var row Row
	rej = dm.MapWarn(nil, &sources.Record{Line: 4, Values: []string{"12", "bad", "1.1.1"}}, &row, &warnings)
	require.NotNil(t, rej)
	require.Equal(t, CodeInvalidEmail, rej.Code)
	require.Len(t, rej.More, 2)
	require.Equal(t, []string{"Mobil", "Født"}, []string{rej.More[0].Column, rej.More[1].Column})
	require.Empty(t, warnings)
}

// TestPreviewShowsEveryProblem: preview lists each problem of a rejected row on a line of its
// own and counts the row once; --json has them under "more".
func TestPreviewShowsEveryProblem(t *testing.T) {
	t.Parallel()
	const csv = "E-post,Mobil,Fødselsdato,Kjønn\nada@example.com,12,31.02.1987,kanskje\ngrace@example.com,,,\n"
	header := []string{"E-post", "Mobil", "Fødselsdato", "Kjønn"}
	spec, _ := Spec{}.WithAuto(header)
	m, err := compile(spec, header, Fields{}, testToday)
	require.NoError(t, err)
	var out bytes.Buffer
	stats, err := Preview(t.Context(), &out, newCSVReader(t, csv), m, PreviewOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(1), stats.Rejected)
	require.Equal(t, map[string]int64{CodeInvalidPhone: 1}, stats.ByCode, "counted once, under its first code")
	require.Contains(t, out.String(), `
Rejects:
LINE  COLUMN       CODE            VALUE         MESSAGE
2     Mobil        invalid_phone   "12"          the phone number has 2 digits after +47, want 8
2     Fødselsdato  invalid_date    "31.02.1987"  the birthday is not a day of the calendar
2     Kjønn        invalid_gender  "kanskje"     the gender is not a gender subsync knows (male/female/other, mann/kvinne/annet)
`)

	out.Reset()
	_, err = Preview(t.Context(), &out, newCSVReader(t, csv), m, PreviewOptions{JSON: true})
	require.NoError(t, err)
	var doc struct{ Rejects []Reject }
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Len(t, doc.Rejects, 1)
	require.Len(t, doc.Rejects[0].Faults(), 3)
	require.Equal(t, CodeInvalidGender, doc.Rejects[0].More[1].Code)
}
