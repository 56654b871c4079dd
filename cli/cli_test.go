package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/config"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources/sourcetest"
)

// testKey is the emulator's API key in these tests: it must never show up in any output.
const testKey = "k3y-that-must-not-leak"

// harness runs the command line in-process against a configuration file.
type harness struct {
	t        *testing.T
	dir      string
	config   string // path of the configuration file
	env      map[string]string
	terminal bool // whether stdin counts as a terminal
	ttyOut   bool // whether stdout counts as a terminal
	srv      *sinktest.Server
}

type result struct {
	code           int
	stdout, stderr string
}

// setup starts an emulator and writes a configuration file that points at it.
func setup(t *testing.T, extraTOML string, opts ...sinktest.Option) *harness {
	t.Helper()
	srv := sinktest.NewServer(t, append([]sinktest.Option{sinktest.WithCredentials("test-user", testKey)}, opts...)...)
	h := &harness{t: t, dir: t.TempDir(), env: map[string]string{config.EnvAPIKey: testKey}, srv: srv}
	h.config = filepath.Join(h.dir, "subsync.toml")
	h.write(fmt.Sprintf(`
[api]
base_url = %q
legacy_base_url = %q
user_id = %q
max_attempts = 1
[worker]
metrics_address = "off"
%s`, srv.URL, srv.LegacyURL, srv.User, extraTOML))
	return h
}

// membersSync creates a list and adds to the configuration a sync of the contacts file
// (see contacts) into it, named members; it returns the list's id.
func (h *harness) membersSync() int64 {
	h.t.Helper()
	list := h.srv.CreateList("Members")
	file := contacts(h.t, h.dir)
	h.write(mustRead(h.t, h.config) + fmt.Sprintf(`
[status]
schedule = "off"
[[syncs]]
name = "members"
list = %d
source = { path = %q }
`, list, filepath.Base(file)))
	return list
}

func (h *harness) write(body string) {
	h.t.Helper()
	require.NoError(h.t, os.WriteFile(h.config, []byte(body), 0o600))
}

func (h *harness) run(stdin string, args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	a := newApp(strings.NewReader(stdin), &out, &errb)
	a.getenv = func(k string) string { return h.env[k] }
	a.isTerminal = func(v any) bool { return h.terminal && v == a.stdin || h.ttyOut && v == a.stdout }
	args = append([]string{"--config", h.config}, args...)
	code := a.main(context.Background(), args)
	r := result{code, out.String(), errb.String()}
	require.NotContains(h.t, r.stdout, testKey)
	require.NotContains(h.t, r.stderr, testKey)
	return r
}

// ok runs a command that must succeed and returns its stdout.
func (h *harness) ok(args ...string) string {
	h.t.Helper()
	r := h.run("", args...)
	require.Equal(h.t, ExitOK, r.code, "subsync %s: stderr:\n%s", strings.Join(args, " "), r.stderr)
	return r.stdout
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	return v
}

func TestListsLifecycle(t *testing.T) {
	t.Parallel()
	h := setup(t, "")

	created := decode[sink.List](t, h.ok("lists", "create", "Weekly news", "--json"))
	require.Positive(t, created.ID)
	require.Equal(t, "Weekly news", created.Title)

	lists := decode[[]sink.List](t, h.ok("lists", "ls", "--json"))
	require.Len(t, lists, 1)
	require.Equal(t, created.ID, lists[0].ID)

	table := h.ok("lists", "ls")
	require.Contains(t, table, "ID")
	require.Contains(t, table, "Weekly news")

	id := fmt.Sprint(created.ID)
	renamed := decode[sink.List](t, h.ok("lists", "rename", id, "Monthly news", "--json"))
	require.Equal(t, "Monthly news", renamed.Title)
	require.Contains(t, h.ok("lists", "show", id), "Monthly news")

	// A delete without a terminal and without --yes is refused with ExitUsage: nothing deleted.
	r := h.run("y\n", "lists", "delete", id)
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "pass --yes")
	require.Len(t, decode[[]sink.List](t, h.ok("lists", "ls", "--json")), 1)

	// On a terminal, "n" keeps the list (exit 1), "y" deletes it.
	h.terminal = true
	r = h.run("n\n", "lists", "delete", id)
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, "Delete list "+id)
	require.Contains(t, r.stderr, "not confirmed")
	require.Len(t, decode[[]sink.List](t, h.ok("lists", "ls", "--json")), 1)
	r = h.run("", "lists", "delete", id)
	require.Equal(t, ExitUsage, r.code, "no answer at all: %s", r.stderr)
	r = h.run("y\n", "lists", "delete", id)
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Empty(t, decode[[]sink.List](t, h.ok("lists", "ls", "--json")))

	// A list that is not there: the command ran and failed.
	r = h.run("", "lists", "show", id)
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, "404")

	// The legacy delete goes through v3.
	other := h.srv.CreateList("Old")
	h.ok("lists", "delete", fmt.Sprint(other), "--legacy", "--yes")
	require.Empty(t, decode[[]sink.List](t, h.ok("lists", "ls", "--json")))
	require.Equal(t, sinktest.V3Prefix+"/subscriberlists/"+fmt.Sprint(other), h.srv.Requests()[len(h.srv.Requests())-2].Path)
}

func TestFieldsLifecycle(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	f := decode[sink.CustomField](t, h.ok("fields", "create", "Region", "--type", "dropdown", "--choice", "north", "--choice", "south", "--json"))
	require.Equal(t, "Region", f.Label)
	require.Equal(t, []string{"north", "south"}, f.Choices)
	require.Regexp(t, `^EXTRA\d+$`, f.Value)

	fs := decode[[]sink.CustomField](t, h.ok("fields", "ls", "--json"))
	require.Len(t, fs, 1)
	require.Contains(t, h.ok("fields", "ls"), f.Value)

	id := fmt.Sprint(f.ID)
	require.Equal(t, "Area", decode[sink.CustomField](t, h.ok("fields", "rename", id, "Area", "--json")).Label)
	require.Contains(t, h.ok("fields", "show", id), "Area")
	h.ok("fields", "delete", id, "--yes")
	require.Empty(t, decode[[]sink.CustomField](t, h.ok("fields", "ls", "--json")))

	r := h.run("", "fields", "create", "X", "--type", "text")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, `--type "text": want one of string, number`)
	r = h.run("", "fields", "create", "X", "--choice", "a")
	require.Equal(t, ExitUsage, r.code)
}

// TestUpsertStatusReachesAServiceReadingTheQuery: `subscribers upsert --status unsubscribed`
// unsubscribes, both from a service that reads the status from the body (the seed) and from one
// that reads it only from the query (the public PHP client).
func TestUpsertStatusReachesAServiceReadingTheQuery(t *testing.T) {
	t.Parallel()
	for _, fromQuery := range []bool{false, true} {
		t.Run(fmt.Sprintf("query only=%t", fromQuery), func(t *testing.T) {
			t.Parallel()
			h := setup(t, "", sinktest.WithStatusFromQuery(fromQuery))
			list := h.srv.CreateList("Members")
			ls := fmt.Sprint(list)
			h.ok("subscribers", "upsert", "--list", ls, "--email", "ada@example.com")
			h.ok("subscribers", "upsert", "--list", ls, "--email", "ada@example.com", "--status", "unsubscribed")
			stored, found := h.srv.SubscriberByEmail("ada@example.com")
			require.True(t, found)
			require.Equal(t, sink.StatusUnsubscribed, stored.Lists[list].Status)
		})
	}
}

func TestSubscribers(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	_, slot := h.srv.CreateCustomField("Tier", sink.DatatypeString)
	ls := fmt.Sprint(list)

	up := decode[map[string]any](t, h.ok("subscribers", "upsert", "--list", ls, "--email", "ada@example.com",
		"--firstname", "Ada", "--external-id", "crm-17", "--set", slot+"=gold", "--set", sink.ConsentEmail+"=1", "--json"))
	id := fmt.Sprint(up["id"])
	stored, found := h.srv.SubscriberByEmail("ada@example.com")
	require.True(t, found)
	require.Equal(t, "gold", stored.Fields[slot])
	require.Equal(t, fmt.Sprint(stored.ID), id)

	show := decode[subscriberJSON](t, h.ok("subscribers", "show", id, "--json"))
	require.Equal(t, "Ada", show.Firstname)
	require.Equal(t, "gold", deref(show.Fields[slot]))
	byEmail := decode[subscriberJSON](t, h.ok("subscribers", "show", "ada@example.com", "--json"))
	require.Equal(t, show.ID, byEmail.ID)
	none := h.run("", "subscribers", "show", "nobody@example.com")
	require.NotZero(t, none.code)
	require.Contains(t, none.stderr, "no subscriber has this e-mail")
	require.Equal(t, "crm-17", deref(show.ExternalID))
	shown := h.ok("subscribers", "show", id)
	require.Contains(t, shown, "Ada")
	require.Regexp(t, `external_id: +crm-17`, shown)
	require.Regexp(t, `status: +\(not in the service's answer\)`, shown)

	legacy := decode[legacySubscriberJSON](t, h.ok("subscribers", "show", id, "--legacy", "--json"))
	require.Equal(t, "ada@example.com", legacy.Email)
	require.Equal(t, "gold", legacy.Extra[strings.ToLower(slot)])
	require.Contains(t, h.ok("subscribers", "show", id, "--legacy"), "firm")

	page := decode[[]subscriberJSON](t, h.ok("subscribers", "ls", "--list", ls, "--json"))
	require.Len(t, page, 1)
	require.Equal(t, "crm-17", deref(page[0].ExternalID))
	page = decode[[]subscriberJSON](t, h.ok("subscribers", "ls", "--list", ls, "--status", "active", "--json"))
	require.Len(t, page, 1)
	require.Equal(t, sink.StatusActive, page[0].Status)
	require.Regexp(t, `crm-17 +active`, h.ok("subscribers", "ls", "--list", ls, "--status", "active"))

	h.ok("subscribers", "unsubscribe", "Ada@Example.com")
	r := h.run("", "subscribers", "unsubscribe", "nobody@example.com")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "no subscriber has this e-mail")
	stored, _ = h.srv.SubscriberByEmail("ada@example.com")
	require.Equal(t, sink.StatusUnsubscribed, stored.Lists[list].Status)
	changes := h.ok("subscribers", "changes", "--json")
	require.Contains(t, changes, `"status": "unsubscribed"`)

	r = h.run("", "subscribers", "delete", id)
	require.Equal(t, ExitUsage, r.code)
	h.ok("subscribers", "delete", id, "--yes", "--legacy")
	_, found = h.srv.SubscriberByEmail("ada@example.com")
	require.False(t, found)

	r = h.run("", "subscribers", "upsert", "--list", ls)
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "--email is required")
	r = h.run("", "subscribers", "show", "abc")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, `subscriber id "abc": want a positive number`)
}

func TestLegacyNeedsItsURL(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	h.write(fmt.Sprintf("[api]\nbase_url = %q\nuser_id = %q\n", h.srv.URL, h.srv.User))
	r := h.run("", "subscribers", "show", "1", "--legacy")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "api.legacy_base_url is not configured")
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	h := setup(t, "[[syncs]]\nname = \"a\"\nlist = 1\nschedule = \"0 25 * * *\"\nsource = { path = \"a.csv\" }\n")
	for _, args := range [][]string{{"config", "check"}, {"lists", "ls"}} {
		r := h.run("", args...)
		require.Equal(t, ExitUsage, r.code)
		require.Equal(t, "subsync: "+h.config+`: syncs[0].schedule: "0 25 * * *": hour out of range`+"\n", r.stderr)
		require.Empty(t, r.stdout)
	}

	h.write("[api]\nbase_url = \"http://example.com/api/public/v2\"\nuser_id = \"u\"\n")
	r := h.run("", "config", "check")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, `api.base_url: "http://example.com/api/public/v2": plain http is refused`)

	h.config = filepath.Join(h.dir, "missing.toml")
	r = h.run("", "config", "check")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, "missing.toml: no such file")
}

func TestConfigCheckAndShow(t *testing.T) {
	t.Parallel()
	h := setup(t, "[database]\nurl = \"postgres://subsync:dbpass@db/subsync\"\n")
	require.Equal(t, h.config+": OK (no syncs)\n", h.ok("config", "check"))
	show := h.ok("config", "show")
	require.Contains(t, show, `api_key = "xxxxx"`)
	require.Contains(t, show, "postgres://subsync:xxxxx@db/subsync")
	require.NotContains(t, show, "dbpass")
	js := decode[map[string]any](t, h.ok("config", "show", "--json"))
	require.Equal(t, "xxxxx", js["API"].(map[string]any)["APIKey"])
}

func TestDefaultConfigFileIsOptional(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	a := newApp(strings.NewReader(""), &out, &errb)
	env := map[string]string{config.EnvUserID: "u", config.EnvAPIKey: testKey}
	a.getenv = func(k string) string { return env[k] }
	a.isTerminal = func(any) bool { return false }
	// The working directory of the test has no subsync.toml.
	_, err := os.Stat(config.DefaultPath)
	require.ErrorIs(t, err, os.ErrNotExist)
	code := a.main(context.Background(), []string{"config", "check"})
	require.Equal(t, ExitOK, code, errb.String())
	require.Equal(t, "configuration (no file: defaults and environment): OK (no syncs)\n", out.String())
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "subsync"`},
		{[]string{"lists", "bogus"}, `unknown command "bogus" for "subsync lists"`},
		{[]string{"lists", "ls", "--nope"}, "unknown flag: --nope"},
		{[]string{"lists", "show"}, "accepts 1 arg(s), received 0"},
		{[]string{"lists", "show", "0"}, `list id "0": want a positive number`},
		{[]string{"--log-format", "xml", "lists", "ls"}, `--log-format "xml": want auto, text or json`},
		{[]string{"--log-level", "loud", "lists", "ls"}, `--log-level "loud"`},
		{[]string{"demo", "extra"}, `unknown command "extra" for "subsync demo"`},
		{[]string{"imprt"}, `unknown command "imprt" for "subsync" (did you mean import?)`},
		{[]string{"lists", "sl"}, `(did you mean ls?)`},
	}
	for _, tt := range tests {
		r := h.run("", tt.args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tt.args, r.stderr)
		require.Contains(t, r.stderr, tt.want, tt.args)
	}
	require.Contains(t, h.ok("lists", "--help"), "subsync lists create")
	require.Contains(t, h.ok("version"), "subsync ")
}

func TestLogFormats(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	r := h.run("", "--log-format", "json", "lists", "create", "L")
	require.Equal(t, ExitOK, r.code)
	line := decode[map[string]any](t, strings.TrimSpace(r.stderr))
	require.Equal(t, "list created", line["msg"])

	r = h.run("", "--log-format", "text", "lists", "create", "L")
	require.Contains(t, r.stderr, `msg="list created"`)

	// auto: JSON unless stderr is a terminal (it is a buffer here).
	r = h.run("", "lists", "create", "L")
	require.True(t, strings.HasPrefix(r.stderr, "{"), r.stderr)

	r = h.run("", "--log-level", "warn", "lists", "create", "L")
	require.Empty(t, r.stderr)
}

func TestPreview(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	csv := filepath.Join(h.dir, "contacts.csv")
	require.NoError(t, os.WriteFile(csv, []byte("E-post;Fornavn;Notat\nada@example.com;Ada;vip\nnot-an-email;Bob;\n"), 0o600))

	// Automatic mapping: no custom field, so the service is not asked.
	out := h.ok("preview", csv)
	require.Contains(t, out, "ada@example.com")
	require.Contains(t, out, "invalid_email")
	require.Empty(t, h.srv.Requests())

	js := decode[map[string]any](t, h.ok("preview", csv, "--json"))
	require.EqualValues(t, 1, js["stats"].(map[string]any)["rejected"])

	// A custom field by label resolves to its slot; a missing one would be created.
	_, slot := h.srv.CreateCustomField("Notes", sink.DatatypeString)
	m := filepath.Join(h.dir, "m.toml")
	require.NoError(t, os.WriteFile(m, []byte("create_missing = true\n[columns]\n\"E-post\" = \"email\"\n\"Notat\" = \"custom:Notes\"\nFornavn = \"custom:Nickname\"\n"), 0o600))
	out = h.ok("preview", csv, "--mapping", m)
	require.Contains(t, out, slot)
	require.Contains(t, out, "custom:Nickname (string, would be created)")
	require.Len(t, h.srv.Subscribers(), 0)
	fields := decode[[]sink.CustomField](t, h.ok("fields", "ls", "--json"))
	require.Len(t, fields, 1, "a preview creates nothing")

	// A mapping that does not fit the file is a usage error.
	require.NoError(t, os.WriteFile(m, []byte("[columns]\n\"Mail\" = \"email\"\n"), 0o600))
	r := h.run("", "preview", csv, "--mapping", m)
	require.Equal(t, ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "Mail")

	// The mapping of a configured sync.
	h.write(fmt.Sprintf("[api]\nbase_url = %q\nuser_id = %q\n[[syncs]]\nname = \"news\"\nlist = 1\nsource = { path = \"contacts.csv\" }\n[syncs.mapping.columns]\n\"E-post\" = \"email\"\nFornavn = \"lastname\"\n", h.srv.URL, h.srv.User))
	out = h.ok("preview", csv, "--sync", "news")
	require.Contains(t, out, "lastname")
	r = h.run("", "preview", csv, "--sync", "nope")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.stderr, `no sync named "nope"`)

	r = h.run("", "preview", filepath.Join(h.dir, "missing.csv"))
	require.Equal(t, ExitUsage, r.code, "a missing file is the user's to fix, as for import")
}

// TestEveryCommandHasHelpWithExamples walks the command tree.
func TestEveryCommandHasHelpWithExamples(t *testing.T) {
	t.Parallel()
	a := newApp(strings.NewReader(""), io.Discard, io.Discard)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" || (c.HasParent() && c.Parent().Name() == "completion") {
			return
		}
		require.NotEmpty(t, c.Short, "%s has no short help", c.CommandPath())
		require.NotEmpty(t, c.Example, "%s has no examples", c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCommand())
}

// preview finds a workbook's sheet and header row as an import does: a notes sheet first
// and a title above the header need no options.
func TestPreviewWorkbookWithNotesAndTitle(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	path := filepath.Join(h.dir, "medlemmer.xlsx")
	sourcetest.NotesAndTitleWorkbook(t, path, [2]string{"Kari", "kari@example.no"})
	out := h.ok("preview", path)
	require.Contains(t, out, "kari@example.no")
}

func TestStateCommandWithoutConfigurationCreatesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	a := newApp(strings.NewReader(""), &out, &errb)
	env := map[string]string{"XDG_CONFIG_HOME": dir}
	a.getenv = func(k string) string { return env[k] }
	a.isTerminal = func(any) bool { return false }
	code := a.main(context.Background(), []string{"runs"})
	require.Equal(t, ExitUsage, code, errb.String())
	require.Contains(t, errb.String(), "no configuration file found")
	_, err := os.Stat("data")
	require.ErrorIs(t, err, os.ErrNotExist, "no data directory is created")
}

func TestConfigPathFollowsDiscoveryOrder(t *testing.T) {
	t.Parallel()
	xdg := t.TempDir()
	file := filepath.Join(xdg, "subsync", "subsync.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte("[api]\n"), 0o600))
	named := filepath.Join(t.TempDir(), "named.toml")
	require.NoError(t, os.WriteFile(named, []byte("[api]\n"), 0o600))
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_CONFIG_HOME": xdg}, file},
		{map[string]string{"XDG_CONFIG_HOME": xdg, config.EnvConfig: named}, named},
	} {
		var out, errb bytes.Buffer
		a := newApp(strings.NewReader(""), &out, &errb)
		a.getenv = func(k string) string { return tt.env[k] }
		a.isTerminal = func(any) bool { return false }
		require.Equal(t, ExitOK, a.main(context.Background(), []string{"config", "path"}), errb.String())
		require.Equal(t, tt.want+"\n", out.String())
	}
}

func TestDurationsReadable(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	log, err := newLogger(&b, logJSON, "info", false)
	require.NoError(t, err)
	log.Info("x", "took", 1500*time.Millisecond)
	require.Contains(t, b.String(), `"took":"1.5s"`)
	require.Equal(t, "342ms", formatDuration(342*time.Millisecond+400*time.Microsecond))
	require.Equal(t, "2m5s", formatDuration(125*time.Second+300*time.Millisecond))
}

func TestUnauthorizedNamesTheCredentials(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	h.env[config.EnvAPIKey] = "wrong"
	for _, args := range [][]string{{"lists", "ls"}, {"fields", "ls"}} {
		r := h.run("", args...)
		require.Equal(t, ExitFailure, r.code, r.stderr)
		require.Contains(t, r.stderr, credentialHint, args)
	}
}
