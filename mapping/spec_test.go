package mapping

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

func TestParseSpec(t *testing.T) {
	t.Parallel()
	spec, err := ParseSpec([]byte(`
create_missing  = true
duplicates      = "reject"
default_country = "+46"
ignore          = ["Notat"]
tags            = ["import"]

[columns]
"E-post"     = "Email"
"Nyhetsbrev" = "samtykkeepost"
Status       = "STATUS"
Grupper      = { to = "tags", separator = ";" }
Kilde        = "custom: Kilde "
Interesser   = { custom = "Interesser", datatype = "multiple_choice", choices = ["Ski", "Fotball"], separator = "|" }
Medlemsnr    = { to = "custom:Medlemsnummer", datatype = "number" }
"Intern ID"  = "ignore"

[constants]
company = "Acme AS"
"custom:Kilde" = "CSV"
SAMTYKKESMS = false
`))
	require.NoError(t, err)
	want := Spec{
		Columns: map[string]Column{
			"E-post":     {To: "email"},
			"Nyhetsbrev": {To: "SAMTYKKEEPOST"},
			"Status":     {To: TargetStatus},
			"Grupper":    {To: TargetTags, Separator: ";"},
			"Kilde":      {To: TargetCustom, Custom: "Kilde"},
			"Interesser": {To: TargetCustom, Custom: "Interesser", Datatype: "multiple_choice", Choices: []string{"Ski", "Fotball"}, Separator: "|"},
			"Medlemsnr":  {To: TargetCustom, Custom: "Medlemsnummer", Datatype: "number"},
			"Intern ID":  {To: TargetIgnore},
		},
		Constants:      map[string]string{"company": "Acme AS", "custom:Kilde": "CSV", "SAMTYKKESMS": "no"},
		Tags:           []string{"import"},
		Ignore:         []string{"Notat"},
		CreateMissing:  true,
		Duplicates:     DuplicatesReject,
		DefaultCountry: "+46",
	}
	require.Equal(t, want, spec)

	// The same keys under a [mapping] table, as copied from a config file.
	wrapped, err := ParseSpec([]byte("[mapping]\ncolumns = { Email = \"email\" }\n"))
	require.NoError(t, err)
	require.Equal(t, Spec{Columns: map[string]Column{"Email": {To: "email"}}}, wrapped)

	// A Spec survives JSON (River job args carry it that way).
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	var back Spec
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, spec, back)
}

func TestParseSpecErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, toml string
		wantErr    []string
	}{
		{"unknown top-level key", `colums = { Email = "email" }`, []string{`colums: unknown key`}},
		{"unknown column key", `columns = { Email = { to = "email", datetype = "date" } }`, []string{`columns.Email.datetype: unknown key`}},
		{"unknown field", `columns = { "E-post" = "emial" }`, []string{`columns.E-post: unknown target "emial"`}},
		{"quoted key path", `columns = { "Fødsels dato" = "bday" }`, []string{`columns."Fødsels dato": unknown target "bday"`}},
		{"unknown datatype", `columns = { X = { custom = "X", datatype = "text" } }`, []string{`columns.X.datatype: unknown datatype "text"`}},
		{"datatype on a standard field", `columns = { X = { to = "firstname", datatype = "date" } }`, []string{`columns.X: datatype and choices belong to custom fields only`}},
		{"choices on a number", `columns = { X = { custom = "X", datatype = "number", choices = ["a"] } }`, []string{`columns.X.choices: choices belong to`}},
		{"separator on a phone", `columns = { X = { to = "phone", separator = ";" } }`, []string{`columns.X.separator: a separator belongs to tags and multiple_choice`}},
		{"empty separator", `columns = { X = { to = "tags", separator = "" } }`, []string{`columns.X.separator: a separator cannot be empty`}},
		{"to and custom disagree", `columns = { X = { to = "custom:A", custom = "B" } }`, []string{`columns.X.custom: names custom field "B" but to names "A"`}},
		{"custom with another to", `columns = { X = { to = "city", custom = "B" } }`, []string{`columns.X.custom: custom cannot be combined with to = "city"`}},
		{"table without target", `columns = { X = { separator = ";" } }`, []string{`columns.X: want to = "<target>" or custom = "<label>"`}},
		{"empty custom label", `columns = { X = "custom:" }`, []string{`columns.X: custom: needs a label`}},
		{"column not a string", `columns = { X = 5 }`, []string{`columns.X: want a target string or a table, got an integer`}},
		{"bad policy", `duplicates = "newest"`, []string{`duplicates: want "last", "first" or "reject", got "newest"`}},
		{"bad country", `default_country = "NO"`, []string{`default_country: "NO" is not a country calling code`}},
		{"bad create_missing", `create_missing = "yes"`, []string{`create_missing: want true or false, got a string`}},
		{"bad tags", `tags = "vip"`, []string{`tags: want an array of strings, got a string`}},
		{"email constant", `constants = { email = "a@b.no" }`, []string{`constants.email: email cannot be a constant`}},
		{"array constant", `constants = { city = ["a"] }`, []string{`constants.city: want a string, got an array`}},
		{"ignored and mapped", "ignore = [\"A\"]\ncolumns = { A = \"city\" }", []string{`columns.A: the column is also in ignore`}},
		{"several problems at once", "colour = 1\nduplicates = 1", []string{"colour: unknown key", "duplicates: want"}},
		{"bad on_invalid", `on_invalid = "skip"`, []string{`on_invalid: want "reject" or "drop", got "skip"`}},
		{"bad column on_invalid", `columns = { X = { to = "phone", on_invalid = "skip" } }`, []string{`columns.X.on_invalid: want "reject" or "drop", got "skip"`}},
		{"drop an e-mail", `columns = { X = { to = "email", on_invalid = "drop" } }`, []string{`columns.X.on_invalid: email is never optional`}},
		{"drop a consent", `columns = { X = { to = "SAMTYKKEEPOST", on_invalid = "drop" } }`, []string{`columns.X.on_invalid: SAMTYKKEEPOST is never optional`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseSpec([]byte(tc.toml))
			var se *SpecError
			require.True(t, errors.As(err, &se), "got %v, want *SpecError", err)
			require.Len(t, se.Problems, len(tc.wantErr), "%v", err)
			for _, want := range tc.wantErr {
				require.Contains(t, err.Error(), want)
			}
		})
	}
	_, err := ParseSpec([]byte("columns = {"))
	require.ErrorContains(t, err, "parse mapping: toml: line 1")
}

func TestLoadSpec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "mapping.toml")
	require.NoError(t, os.WriteFile(good, []byte(`columns = { "E-post" = "email" }`), 0o600))
	spec, err := LoadSpec(good)
	require.NoError(t, err)
	require.Equal(t, Column{To: "email"}, spec.Columns["E-post"])

	bad := filepath.Join(dir, "bad.toml")
	require.NoError(t, os.WriteFile(bad, []byte(`columns = { "E-post" = "emial" }`), 0o600))
	_, err = LoadSpec(bad)
	require.ErrorContains(t, err, "mapping "+bad+": invalid mapping: columns.E-post: unknown target \"emial\"")

	_, err = LoadSpec(filepath.Join(dir, "missing.toml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A config struct holding a Spec decodes it through UnmarshalTOML; unknown keys inside the
// mapping fail with the mapping's message, and MetaData.Undecoded stays clean.
func TestSpecInsideConfig(t *testing.T) {
	t.Parallel()
	var cfg struct {
		Syncs []struct {
			Name    string `toml:"name"`
			Mapping Spec   `toml:"mapping"`
		} `toml:"syncs"`
	}
	md, err := toml.Decode(`
[[syncs]]
name = "members"
[syncs.mapping]
duplicates = "first"
[syncs.mapping.columns]
"E-post" = "email"
Medlemsnr = { custom = "Medlemsnummer", datatype = "number" }
`, &cfg)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.Equal(t, DuplicatesFirst, cfg.Syncs[0].Mapping.Duplicates)
	require.Equal(t, Column{To: TargetCustom, Custom: "Medlemsnummer", Datatype: "number"}, cfg.Syncs[0].Mapping.Columns["Medlemsnr"])

	_, err = toml.Decode(`
[[syncs]]
name = "members"
[syncs.mapping]
columns = { "E-post" = { to = "email", separtor = ";" } }
`, &cfg)
	require.ErrorContains(t, err, `line 4 (last key "syncs.mapping"): invalid mapping: columns.E-post.separtor: unknown key`)
}

// The example mapping file parses and compiles, so it cannot rot.
func TestExampleMappingFile(t *testing.T) {
	t.Parallel()
	spec, err := LoadSpec("example.mapping.toml")
	require.NoError(t, err)
	header := []string{"E-post", "E-post 2", "Fornavn", "Etternavn", "Navn", "Adresse", "Postnr", "Poststed", "Mobil", "Fødselsdato", "Kjønn",
		"Nyhetsbrev", "SMS", "Grupper", "Medlemsnr", "Medlemstype", "Interesser", "Innmeldt", "Notat", "Intern ID"}
	fields := NewFields([]sink.CustomField{
		{Label: "Medlemsnummer", Value: "EXTRA1", Datatype: "number"},
		{Label: "Medlemstype", Value: "EXTRA2", Datatype: "single_choice", Choices: []string{"Senior", "Junior"}},
		{Label: "Interesser", Value: "EXTRA3", Datatype: "multiple_choice", Choices: []string{"Ski", "Fotball"}},
		{Label: "Innmeldt", Value: "EXTRA4", Datatype: "date"},
		{Label: "Kilde", Value: "EXTRA5", Datatype: "string"},
	})
	m, err := Compile(spec, header, fields)
	require.NoError(t, err)
	require.Empty(t, m.Unplaced())
}
