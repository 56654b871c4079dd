package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestRejectRecord: a reject is kept in the run history whole: where it stood, the column,
// value, code and reason, the source row, and every other problem of the row.
func TestRejectRecord(t *testing.T) {
	t.Parallel()
	rej := mapping.Reject{Ordinal: 3, Line: 9, Sheet: "Ark1", Column: "Navn", Value: "Ola", Code: mapping.CodeTooLong, Message: "too long"}
	require.Equal(t, state.Reject{Ordinal: 3, Line: 9, Sheet: "Ark1", Column: "Navn", Value: "Ola", Code: mapping.CodeTooLong,
		Reason: "too long", Row: `["Ola"]`}, rejectRecord(&rej, state.EncodeRow([]string{"Ola"})))

	spec, err := mapping.ParseSpec([]byte("[columns]\n\"E-post\" = \"email\"\nMobil = { to = \"phone\", on_invalid = \"drop\" }\n\"Født\" = \"birthday\"\n"))
	require.NoError(t, err)
	m, err := mapping.Compile(spec, []string{"Mobil", "E-post", "Født"}, mapping.Fields{})
	require.NoError(t, err)
	var row mapping.Row
	var warnings []mapping.Reject
	r := m.MapWarn(nil, &sources.Record{Line: 4, Values: []string{"12", "bad", "1.1.1"}}, &row, &warnings)
	require.NotNil(t, r)
	rec := rejectRecord(r, "")
	require.Equal(t, mapping.CodeInvalidEmail, rec.Code)
	require.Equal(t, []state.Problem{
		{Column: "Mobil", Value: "12", Code: mapping.CodeInvalidPhone, Reason: r.More[0].Message},
		{Column: "Født", Value: "1.1.1", Code: mapping.CodeInvalidDate, Reason: r.More[1].Message},
	}, rec.More)
	require.Len(t, rec.Problems(), 3)
}
