package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWhereFiltersRows: where = 'Land == "NO"' on a 4-row file with two Norwegian rows sends
// 2 and counts 2 as filtered (not rejected); a computed field fills its target.
func TestWhereFiltersRows(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := filepath.Join(h.dir, "land.csv")
	require.NoError(t, os.WriteFile(file, []byte("E-post,Navn,Land\n"+
		"kari@example.no,Kari Nordmann,NO\nsven@example.se,Sven Svensson,SE\nola@example.no,Ola Hansen,NO\njohn@example.com,John Smith,US\n"), 0o600))
	mapFile := filepath.Join(h.dir, "land.mapping.toml")
	require.NoError(t, os.WriteFile(mapFile, []byte(`where = 'Land == "NO"'
[columns]
"E-post" = "email"
Navn = "ignore"
Land = "ignore"
[computed]
firstname = 'split(Navn, " ")[0]'
company = '"Kunde i " + lower(Land)'
`), 0o600))

	preview := h.ok("preview", file, "--mapping", mapFile)
	require.Contains(t, preview, "4 rows read: 2 mapped, 0 rejected, 2 filtered (where)")

	run := decode[runJSON](t, h.ok("import", file, "--list", fmt.Sprint(list), "--mapping", mapFile, "--wait", "--json"))
	require.Equal(t, "completed", run.State)
	require.Equal(t, int64(4), run.Counts.Read)
	require.Equal(t, int64(2), run.Counts.Sent)
	require.Equal(t, int64(2), run.Counts.Filtered)
	require.Equal(t, int64(0), run.Counts.Rejected)
	subs := h.srv.ListSubscribers(list)
	require.Len(t, subs, 2)
	var names []string
	for _, s := range subs {
		names = append(names, s.Fields["firstname"]+"/"+s.Fields["company"])
	}
	require.ElementsMatch(t, []string{"Kari/Kunde i no", "Ola/Kunde i no"}, names)
	require.Contains(t, h.ok("runs", fmt.Sprint(run.ID)), "filtered (where)")
	require.Equal(t, int64(2), decode[runJSON](t, h.ok("runs", fmt.Sprint(run.ID), "--json")).Counts.Filtered)

	// import --wait says so in words too, and so does the runs list.
	again := h.ok("import", file, "--list", fmt.Sprint(list), "--mapping", mapFile, "--wait")
	require.Regexp(t, `filtered \(where\):\s+2\n`, again)
	require.Contains(t, h.ok("runs"), "2 filtered (where)")
}

// TestConfigCheckExpressionSyntaxError: an expression with a syntax error fails config check
// with exit 2, naming the key and the position of the error.
func TestConfigCheckExpressionSyntaxError(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	h.write(mustRead(t, h.config) + `
[[syncs]]
name = "crm"
list = 1
source = { path = "a.csv" }
[syncs.mapping]
where = 'Land == "NO" &&'
`)
	r := h.run("", "config", "check")
	require.Equal(t, ExitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "syncs[0].mapping.where: error at line 1, column 15: unexpected token EOF")

	h.write(mustRead(t, h.config)[:len(mustRead(t, h.config))-len("where = 'Land == \"NO\" &&'\n")] + "[syncs.mapping.computed]\nfirstname = 'upper(Navn'\n")
	r = h.run("", "config", "check")
	require.Equal(t, ExitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "syncs[0].mapping.computed.firstname: error at line 1, column 10: unexpected token EOF")
}
