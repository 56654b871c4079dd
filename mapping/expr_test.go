package mapping

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// TestWhereAndComputed: where leaves rows out as filtered (not rejects); computed targets are
// checked as column values are; expressions are compiled against the header, and a failing
// one rejects its row with the other problems.
func TestWhereAndComputed(t *testing.T) {
	t.Parallel()
	header := []string{"E-post", "Navn", "Land", "Født"}
	m := mustCompile(t, `
where = 'Land in ["NO", "SE"]'
[columns]
"E-post" = "email"
Navn = "ignore"
Land = "ignore"
[computed]
lastname = 'split(Navn, " ")[-1]'
birthday = '$env["Født"]'
`, header, Fields{})
	row, rej := m.Map(sources.Record{Line: 2, Values: []string{"a@b.no", "Kari Anne Hansen", "NO", "17.05.1985"}})
	require.Nil(t, rej)
	require.Equal(t, "Hansen", row.Sub.Lastname)
	require.Equal(t, "1985-05-17", row.Sub.Birthday)

	_, rej = m.Map(sources.Record{Line: 3, Values: []string{"a@b.no", "X Y", "US", ""}})
	require.NotNil(t, rej)
	require.Equal(t, CodeFiltered, rej.Code)

	// A computed value goes through its target's checks, with the row's other problems.
	_, rej = m.Map(sources.Record{Line: 4, Values: []string{"bad", "Kari Hansen", "NO", "31.02.1985"}})
	require.NotNil(t, rej)
	require.Equal(t, CodeInvalidEmail, rej.Code)
	require.Len(t, rej.More, 1)
	require.Equal(t, "computed.birthday", rej.More[0].Column)
	require.Equal(t, CodeInvalidDate, rej.More[0].Code)

	// Compiled against the header: a column the source lacks, a where that is no condition,
	// a target claimed twice.
	for src, want := range map[string]string{
		"where = 'Country == \"NO\"'\n[columns]\n\"E-post\" = \"email\"\n":                          "where: error at line 1, column 1: unknown name Country",
		"where = 'Land'\n[columns]\n\"E-post\" = \"email\"\n":                                       "where:",
		"[columns]\n\"E-post\" = \"email\"\nNavn = \"firstname\"\n[computed]\nfirstname = 'Navn'\n": "firstname is already mapped",
	} {
		spec, err := ParseSpec([]byte(src))
		require.NoError(t, err, src)
		_, err = compile(spec, header, Fields{}, testToday)
		require.ErrorContains(t, err, want, src)
	}
	_, err := ParseSpec([]byte("[computed]\nemail = 'x'\n"))
	require.ErrorContains(t, err, "email cannot be computed")
	_, err = ParseSpec([]byte("where = 'Land ==== 1'\n"))
	require.ErrorContains(t, err, "where: error at line 1, column")
}
