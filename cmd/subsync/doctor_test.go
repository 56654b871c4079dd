package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
	"github.com/subsync/subsync/sink"
)

// TestBinaryDoctorAgainstSubsim: against subsim with one configured list missing and one
// mapped custom field of the wrong datatype, `subsync doctor` names exactly those two and
// exits 1; with the set-up corrected it exits 0, also as `config check --online`. Its saved
// samples hold no e-mail address, name or phone number of the service's subscribers.
func TestBinaryDoctorAgainstSubsim(t *testing.T) {
	t.Parallel()
	v2, v3 := startSubsim(t)
	dir := t.TempDir()
	env := []string{"SUBSYNC_API_KEY=" + key}
	writeConfig := func(extra string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "subsync.toml"), []byte(fmt.Sprintf(`
[api]
base_url = %q
legacy_base_url = %q
user_id = "bin-user"
[worker]
metrics_address = "off"
%s`, v2, v3, extra)), 0o600))
	}
	writeConfig("")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crm.csv"), []byte("E-post,Kundenr,Nivå\n"), 0o600))

	r := run(t, dir, env, "lists", "create", "Kunder", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var list sink.List
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	for _, f := range [][2]string{{"Kundenummer", "string"}, {"Nivå", "string"}} {
		r = run(t, dir, env, "fields", "create", f[0], "--type", f[1])
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}
	// Personal data in the service, some of it in the status feed.
	people := [][4]string{{"kari.nordmann@example.com", "Kari", "Nordmann", "+4791234567"},
		{"ola.hansen@example.com", "Ola", "Hansen", "+4798765432"}}
	for _, p := range people {
		r = run(t, dir, env, "subscribers", "upsert", "--list", fmt.Sprint(list.ID), "--email", p[0],
			"--firstname", p[1], "--lastname", p[2], "--phone", p[3], "--status", "unsubscribed")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
	}

	syncs := func(nivåType string, missingList bool) string {
		s := fmt.Sprintf(`
[[syncs]]
name = "crm"
list = %d
source = { path = "crm.csv" }
[syncs.mapping.columns]
"E-post" = "email"
"Kundenr" = { custom = "Kundenummer", datatype = "string" }
"Nivå" = { custom = "Nivå", datatype = %q }
`, list.ID, nivåType)
		if missingList {
			s += `
[[syncs]]
name = "gammel"
list = 4242
source = { path = "crm.csv" }
`
		}
		return s
	}

	writeConfig(syncs("number", true))
	samples := filepath.Join(dir, "samples")
	r = run(t, dir, env, "doctor", "--save-samples", samples)
	require.Equal(t, cli.ExitFailure, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	var failures []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "FAIL") {
			failures = append(failures, strings.TrimSpace(line))
		}
	}
	require.Len(t, failures, 2, r.stdout)
	require.Contains(t, failures[0], `list 4242 (syncs[1] "gammel") does not exist`)
	require.Contains(t, failures[1], `custom field "Nivå"`)
	require.Contains(t, failures[1], "of datatype string; the mapping expects number")
	require.Contains(t, r.stdout, "fix: create it (subsync lists create TITLE)")
	require.Contains(t, r.stdout, "the status feed answers in a shape subsync reads (2 changes")
	t.Logf("doctor:\n%s", r.stdout)

	// The samples: every response, personal data replaced.
	entries, err := os.ReadDir(samples)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(entries), 4, "lists, custom fields, status feed, legacy")
	var all strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(samples, e.Name()))
		require.NoError(t, err)
		require.True(t, json.Valid(data), e.Name())
		all.Write(data)
	}
	text := all.String()
	require.Contains(t, text, "subscriberstatus")
	require.Contains(t, text, `"status": "unsubscribed"`, "what is not personal stays, for a developer")
	require.Contains(t, text, "Kundenummer")
	for _, p := range people {
		for _, v := range append(p[:], strings.Split(p[0], "@")[0], strings.TrimPrefix(p[3], "+47")) {
			require.NotContains(t, text, v)
		}
	}
	require.NotContains(t, text, "@")

	// Set up as the configuration expects: all is well.
	writeConfig(syncs("string", false))
	r = run(t, dir, env, "doctor")
	require.Equal(t, cli.ExitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.NotContains(t, r.stdout, "FAIL")
	require.Contains(t, r.stdout, "all checks passed")
	r = run(t, dir, env, "config", "check", "--online")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "all checks passed")
}
