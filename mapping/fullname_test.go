package mapping

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// TestFullNameSplit: a full-name column (Navn, Fullt navn, Name, Full Name) is mapped with no
// mapping file and split into first and last name, the last word the last name; a split
// can be chosen, a comma means last name first, and separate name columns win.
func TestFullNameSplit(t *testing.T) {
	t.Parallel()
	for _, col := range []string{"Navn", "Fullt navn", "Name", "Full Name"} {
		header := []string{"E-post", col}
		spec, unplaced := Spec{}.WithAuto(header)
		require.Empty(t, unplaced, col)
		m, err := compile(spec, header, Fields{}, testToday)
		require.NoError(t, err)
		row, rej := m.Map(sources.Record{Values: []string{"kari@example.no", "  Kari  Anne Hansen "}})
		require.Nil(t, rej)
		require.Equal(t, "Kari Anne", row.Sub.Firstname, col)
		require.Equal(t, "Hansen", row.Sub.Lastname, col)
	}

	cases := []struct{ split, in, first, last string }{
		{"", "Cher", "Cher", ""},
		{"", "Hansen, Kari Anne", "Kari Anne", "Hansen"},
		{"first-word", "Kari Anne Hansen", "Kari", "Anne Hansen"},
		{"last-first", "Hansen Kari Anne", "Kari Anne", "Hansen"},
		{"last-word", "Ludwig van Beethoven", "Ludwig van", "Beethoven"},
	}
	for _, tc := range cases {
		spec := `[columns]
E-post = "email"
Navn = { to = "fullname" }
`
		if tc.split != "" {
			spec = `[columns]
E-post = "email"
Navn = { to = "fullname", split = "` + tc.split + `" }
`
		}
		m := mustCompile(t, spec, []string{"E-post", "Navn"}, Fields{})
		row, rej := m.Map(sources.Record{Values: []string{"a@b.no", tc.in}})
		require.Nil(t, rej)
		require.Equal(t, [2]string{tc.first, tc.last}, [2]string{row.Sub.Firstname, row.Sub.Lastname}, "%q split %q", tc.in, tc.split)
	}

	// Google's legacy export has Name, Given Name and Family Name: the separate columns win
	// where they have a value, the full name fills in where they do not.
	header := []string{"Name", "Given Name", "Family Name", "E-mail 1 - Value"}
	spec, _ := Spec{}.WithAuto(header)
	m, err := compile(spec, header, Fields{}, testToday)
	require.NoError(t, err)
	row, rej := m.Map(sources.Record{Values: []string{"Ola Nordmann", "Ola Magnus", "", "ola@example.no"}})
	require.Nil(t, rej)
	require.Equal(t, [2]string{"Ola Magnus", "Nordmann"}, [2]string{row.Sub.Firstname, row.Sub.Lastname})

	_, err = ParseSpec([]byte("[columns]\nNavn = { to = \"firstname\", split = \"last-word\" }\n"))
	require.ErrorContains(t, err, "split belongs to fullname columns only")
	_, err = ParseSpec([]byte("[columns]\nNavn = { to = \"fullname\", split = \"middle\" }\n"))
	require.ErrorContains(t, err, `columns.Navn.split: want "last-word", "first-word", "last-first"`)
}

// TestPreviewNavnWithoutMapping is the check: Navn = "Kari Anne Hansen" previews as
// firstname "Kari Anne", lastname "Hansen" with no mapping.
func TestPreviewNavnWithoutMapping(t *testing.T) {
	t.Parallel()
	header := []string{"Navn", "E-post"}
	spec, unplaced := Spec{}.WithAuto(header)
	require.Empty(t, unplaced)
	m, err := compile(spec, header, Fields{}, testToday)
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = Preview(t.Context(), &out, newCSVReader(t, "Navn,E-post\nKari Anne Hansen,kari@example.no\n"), m, PreviewOptions{})
	require.NoError(t, err)
	require.Contains(t, out.String(), `
LINE  email            firstname  lastname
2     kari@example.no  Kari Anne  Hansen
`)
	require.Contains(t, out.String(), "  Navn    fullname\n")
}
