package cli

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

// contacts writes a CSV file with two good rows and one without a valid e-mail.
func contacts(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "contacts.csv")
	require.NoError(t, os.WriteFile(path, []byte("E-post;Fornavn;Etternavn\nada@example.com;Ada;Lovelace\n=cmd|x;Bob;B\ngrace@example.com;Grace;Hopper\n"), 0o600))
	return path
}

func TestImportWaitThenRunsAndRejects(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := contacts(t, h.dir)

	run := decode[runJSON](t, h.ok("import", file, "--list", fmt.Sprint(list), "--wait", "--json"))
	require.Equal(t, "completed", run.State)
	require.Equal(t, int64(3), run.Counts.Read)
	require.Equal(t, int64(2), run.Counts.Sent)
	require.Equal(t, int64(1), run.Counts.Rejected)
	require.Len(t, h.srv.ListSubscribers(list), 2)

	runs := decode[[]runJSON](t, h.ok("runs", "--json"))
	require.Len(t, runs, 1)
	require.Equal(t, run.ID, runs[0].ID)
	require.Contains(t, h.ok("runs"), "contacts.csv")
	require.Contains(t, h.ok("runs", fmt.Sprint(run.ID)), "completed")

	// Rejects export as CSV: the row whole under the source's header, with the formula-like
	// cell neutralised, in UTF-8 with a byte-order mark and the source's semicolons.
	out := filepath.Join(h.dir, "rejects.csv")
	h.ok("runs", fmt.Sprint(run.ID), "--rejects", out)
	data := mustRead(t, out)
	require.True(t, strings.HasPrefix(data, "\uFEFFE-post;Fornavn;"), data)
	cr := csv.NewReader(strings.NewReader(strings.TrimPrefix(data, "\uFEFF")))
	cr.Comma = ';'
	recs, err := cr.ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, []string{"E-post", "Fornavn", "Etternavn", "subsync:kind", "subsync:line", "subsync:column",
		"subsync:code", "subsync:reason"}, recs[0])
	require.Equal(t, []string{"'=cmd|x", "Bob", "B", "rejected", "3", "E-post", "invalid_email"}, recs[1][:7])
	require.Equal(t, h.ok("runs", fmt.Sprint(run.ID), "--rejects", "-"), strings.TrimPrefix(mustRead(t, out), "\uFEFF"),
		"standard output: the same, without the byte-order mark")

	require.Empty(t, decode[[]jobJSON](t, h.ok("jobs", "ls", "--json")))

	r := h.run("", "runs", "999")
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, "run 999: no such run")
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestImportQueuedThenWorkedBySync(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := contacts(t, h.dir)

	// Without --wait the job is only queued.
	queued := decode[map[string]int64](t, h.ok("import", file, "--list", fmt.Sprint(list), "--json"))
	jobs := decode[[]jobJSON](t, h.ok("jobs", "ls", "--json"))
	require.Len(t, jobs, 1)
	require.Equal(t, queued["job_id"], jobs[0].ID)
	require.Equal(t, "import", jobs[0].Kind)
	require.Empty(t, h.srv.ListSubscribers(list))

	// Cancelling it records a cancelled run and nothing is sent.
	h.ok("jobs", "cancel", fmt.Sprint(queued["job_id"]))
	require.Empty(t, decode[[]jobJSON](t, h.ok("jobs", "ls", "--json")))
	runs := decode[[]runJSON](t, h.ok("runs", "--json", "--state", "cancelled"))
	require.Len(t, runs, 1)
	require.Empty(t, h.srv.ListSubscribers(list))
}

func TestImportRunFailedExitsOne(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	file := contacts(t, h.dir)
	list := h.srv.CreateList("Members")
	h.env["SUBSYNC_API_KEY"] = "not-the-key" // the service answers 401 to the list check
	r := h.run("", "import", file, "--list", fmt.Sprint(list), "--wait")
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, "api.base_url "+h.srv.URL)
	require.Contains(t, r.stderr, "(401): check api.user_id (or SUBSYNC_USER_ID) and the API key")
	h.env["SUBSYNC_API_KEY"] = testKey
	require.Empty(t, decode[[]runJSON](t, h.ok("runs", "--json")), "nothing was queued")
	require.Empty(t, decode[[]jobJSON](t, h.ok("jobs", "ls", "--json")))
}

func TestSyncAndStatusPull(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := contacts(t, h.dir)
	h.write(mustRead(t, h.config) + fmt.Sprintf(`
[status]
schedule = "off"
[[syncs]]
name = "members"
list = %d
source = { path = %q }
[syncs.mapping.columns]
"E-post" = "email"
"Fornavn" = "firstname"
`, list, filepath.Base(file)))

	first := decode[runJSON](t, h.ok("sync", "members", "--wait", "--json"))
	require.Equal(t, "completed", first.State)
	require.Equal(t, int64(2), first.Counts.Sent)

	// Nothing changed: the delta sends nothing.
	second := decode[runJSON](t, h.ok("sync", "members", "--wait", "--json"))
	require.Equal(t, int64(0), second.Counts.Sent)
	require.Equal(t, int64(2), second.Counts.Unchanged)

	// Ada unsubscribes at the service; the status pull records it, and a full sync leaves
	// her out.
	require.NoError(t, h.srv.SetStatus("ada@example.com", list, sink.StatusUnsubscribed))
	pull := decode[runJSON](t, h.ok("status", "pull", "--wait", "--json"))
	require.Equal(t, "completed", pull.State)
	full := decode[runJSON](t, h.ok("sync", "members", "--full", "--wait", "--json"))
	require.Equal(t, int64(1), full.Counts.Suppressed)
	require.Equal(t, int64(1), full.Counts.Sent)
	ada, _ := h.srv.SubscriberByEmail("ada@example.com")
	require.Equal(t, sink.StatusUnsubscribed, ada.Lists[list].Status)

	require.Len(t, decode[[]runJSON](t, h.ok("runs", "--kind", "sync", "--name", "members", "--json")), 3)

	r := h.run("", "sync", "nope")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, `no sync named "nope"`)
}

func TestDatabaseCommandsNeedNoCredentials(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	delete(h.env, "SUBSYNC_API_KEY")
	h.ok("migrate")
	require.Contains(t, h.ok("runs"), "RUN")
	r := h.run("", "lists", "ls")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "api.api_key: missing")
	r = h.run("", "config", "check")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "api.api_key: missing")
	_, err := os.Stat(filepath.Join(h.dir, "data", "subsync.db"))
	require.NoError(t, err, "the SQLite database is in data_dir, relative to the config file")
}

func TestImportUsage(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	file := contacts(t, h.dir)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"import", file}, "--list: want the id"},
		{[]string{"import", "--list", "1"}, "give a FILE to import, or --source NAME"},
		{[]string{"import", file, "--list", "1", "--source", "crm"}, "not both"},
		{[]string{"import", "--list", "1", "--source", "crm"}, `--source "crm": no [sources.crm]`},
		{[]string{"import", file, "--list", "1", "--suppression", "ignore"}, `--suppression "ignore"`},
		{[]string{"import", file, "--list", "1", "--tag", "add"}, `--tag "add"`},
		{[]string{"import", file, "--list", "1", "--mapping", filepath.Join(h.dir, "nope.toml")}, "read mapping"},
		{[]string{"runs", "--rejects", "x.csv"}, "--rejects needs the id of a run"},
		{[]string{"runs", "1", "--format", "xlsx"}, "--format goes with --rejects FILE"},
		{[]string{"runs", "1", "--rejects", "x", "--format", "xls"}, `format "xls": want csv or xlsx`},
		{[]string{"runs", "--kind", "export"}, `--kind "export"`},
	} {
		r := h.run("", tt.args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tt.args, r.stderr)
		require.Contains(t, r.stderr, tt.want, strings.Join(tt.args, " "))
	}
}

func TestImportRefusedBeforeQueueing(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := contacts(t, h.dir)
	xls := filepath.Join(h.dir, "old.xls")
	require.NoError(t, os.WriteFile(xls, []byte("not really"), 0o600))
	mappingFile := filepath.Join(h.dir, "bad.mapping.toml")
	require.NoError(t, os.WriteFile(mappingFile, []byte("columns = ["), 0o600))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"import", filepath.Join(h.dir, "missing.csv"), "--list", fmt.Sprint(list)}, "missing.csv: no such file or directory"},
		{[]string{"import", h.dir, "--list", fmt.Sprint(list), "--wait"}, "is a directory"},
		{[]string{"import", xls, "--list", fmt.Sprint(list)}, "(.xls) is not supported"},
		{[]string{"import", file, "--list", fmt.Sprint(list), "--mapping", mappingFile}, "--mapping"},
		{[]string{"import", file, "--list", "999"}, "--list 999: the service has no such list"},
		{[]string{"import", file, "--list", "999", "--wait"}, "--list 999: the service has no such list"},
	} {
		r := h.run("", tt.args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tt.args, r.stderr)
		require.Contains(t, r.stderr, tt.want, tt.args)
	}
	require.Empty(t, decode[[]runJSON](t, h.ok("runs", "--json")), "no run recorded")
	require.Empty(t, decode[[]jobJSON](t, h.ok("jobs", "ls", "--json")), "nothing queued")
}

func TestImportOutlookExportMapsHomeAddress(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := filepath.Join(h.dir, "outlook.csv")
	require.NoError(t, os.WriteFile(file, []byte("First Name,E-mail Address,Business Street,Business City,Business Postal Code,Home Street,Home City,Home Postal Code\n"+
		"Ada,ada@example.com,,,,Storgata 1,Oslo,0155\n"), 0o600))
	r := h.run("", "preview", file)
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, `address: column "Home Street" chosen (a value in 1 of 1 sampled rows); alternatives: Business Street`)
	h.ok("import", file, "--list", fmt.Sprint(list), "--wait")
	ada, ok := h.srv.SubscriberByEmail("ada@example.com")
	require.True(t, ok)
	require.Equal(t, "Storgata 1", ada.Fields["address"])
	require.Equal(t, "Oslo", ada.Fields["city"])
	require.Equal(t, "0155", ada.Fields["zip"])
}
