package mapping_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
)

// A mapping written as a file (the import page's download) reads back as the same mapping,
// column names with quotes, backslashes, markup and control characters included.
func TestSpecTOMLRoundTrip(t *testing.T) {
	t.Parallel()
	spec := mapping.Spec{
		Columns: map[string]mapping.Column{
			"E-post":                  {To: "email", Fallback: []string{"E-post 2"}},
			"E-post 2":                {To: "ignore"},
			"Navn":                    {To: mapping.TargetFullName, Split: "last-word"},
			`Kilde "CRM" \ <b>`:       {To: mapping.TargetCustom, Custom: "Kilde"},
			"Interesser":              {To: mapping.TargetCustom, Custom: "Interesser", Datatype: "multiple_choice", Choices: []string{"Ski", "Fotball"}, Separator: ";"},
			"Mobil":                   {To: "phone", OnInvalid: mapping.OnInvalidDrop},
			"Nyhetsbrev":              {To: "SAMTYKKEEPOST"},
			"Grupper\tmed\ntab":       {To: mapping.TargetTags, Separator: "|"},
			"<img src=x onerror=a()>": {To: "firstname"},
		},
		Constants:      map[string]string{"company": "Acme \"AS\"", "custom:Kilde": "CSV-import"},
		Tags:           []string{"import", "web"},
		Ignore:         []string{"Notat"},
		CreateMissing:  true,
		Duplicates:     mapping.DuplicatesFirst,
		DefaultCountry: "+47",
		OnInvalid:      mapping.OnInvalidReject,
	}
	data := spec.TOML("made on the import page for medlemmer.xlsx")
	back, err := mapping.ParseSpec(data)
	require.NoError(t, err, string(data))
	require.Equal(t, spec, back, string(data))
	require.Contains(t, string(data), "# made on the import page for medlemmer.xlsx\n")

	for _, target := range mapping.Targets() {
		c, err := mapping.ParseTarget(target)
		require.NoError(t, err, target)
		require.Equal(t, target, mapping.TargetString(c))
	}
}
