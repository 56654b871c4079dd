package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
)

// These tests run the built binary, as a user or a service manager would.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "subsync-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "subsync")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const key = "binary-test-key"

type result struct {
	code           int
	stdout, stderr string
}

// run executes the binary in dir with a clean SUBSYNC_* environment plus env.
func run(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUBSYNC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "run %v", args)
		code = ee.ExitCode()
	}
	r := result{code, out.String(), errb.String()}
	require.NotContains(t, r.stdout+r.stderr, key)
	return r
}

// emulator starts the service emulator and writes a subsync.toml pointing at it over
// loopback plain http; the key comes from the environment.
func emulator(t *testing.T) (*sinktest.Server, string, []string) {
	t.Helper()
	srv := sinktest.NewServer(t, sinktest.WithCredentials("bin-user", key))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "subsync.toml"), []byte(fmt.Sprintf(`
[api]
base_url = %q
legacy_base_url = %q
user_id = "bin-user"
`, srv.URL, srv.LegacyURL)), 0o600))
	return srv, dir, []string{"SUBSYNC_API_KEY=" + key}
}

func TestBinaryListsCreateThenLs(t *testing.T) {
	t.Parallel()
	srv, dir, env := emulator(t)
	r := run(t, dir, env, "lists", "create", "Binary list", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var created sink.List
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &created))

	r = run(t, dir, env, "lists", "ls", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var lists []sink.List
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &lists))
	require.Len(t, lists, 1)
	require.Equal(t, created.ID, lists[0].ID)
	require.Equal(t, "Binary list", lists[0].Title)
	require.Len(t, srv.Requests(), 2)
}

func TestBinaryLegacyShow(t *testing.T) {
	t.Parallel()
	srv, dir, env := emulator(t)
	list := srv.CreateList("L")
	c, err := sink.New(sink.Config{BaseURL: srv.URL, UserID: srv.User, APIKey: srv.Key})
	require.NoError(t, err)
	id, err := c.UpsertSubscriber(t.Context(), list, sink.Subscriber{Email: "grace@example.com", Company: "Navy", Phone: "+4712345678"}, "")
	require.NoError(t, err)

	r := run(t, dir, env, "subscribers", "show", fmt.Sprint(id), "--legacy", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var legacy map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &legacy))
	require.Equal(t, "grace@example.com", legacy["email"])
	require.Equal(t, "Navy", legacy["firm"], "company is firm in v3")
	require.Equal(t, "+4712345678", legacy["mobile"], "phone is mobile in v3")
	last := srv.Requests()[len(srv.Requests())-1]
	require.Equal(t, sinktest.V3Prefix+fmt.Sprintf("/subscribers/%d", id), last.Path)
}

func TestBinaryConfigError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "subsync.toml"), []byte(`
[api]
user_id = "u"

[[syncs]]
name = "one"
list = 1
source = { path = "one.csv" }

[[syncs]]
name = "two"
list = 2
schedule = "0 25 * * *"
source = { path = "two.csv" }
`), 0o600))
	env := []string{"SUBSYNC_API_KEY=" + key}
	for _, args := range [][]string{{"config", "check"}, {"lists", "ls"}} {
		r := run(t, dir, env, args...)
		require.Equal(t, cli.ExitUsage, r.code)
		require.Equal(t, `subsync: subsync.toml: syncs[1].schedule: "0 25 * * *": hour out of range`+"\n", r.stderr)
		require.Empty(t, r.stdout)
	}
}

func TestBinaryRefusesPlainHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prod.toml"), []byte(`
[api]
base_url = "http://example.com/api/public/v2"
user_id = "u"
`), 0o600))
	r := run(t, dir, []string{"SUBSYNC_API_KEY=" + key}, "--config", "prod.toml", "lists", "ls")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, `prod.toml: api.base_url: "http://example.com/api/public/v2": plain http is refused for a non-loopback host`)
	require.Empty(t, r.stdout)
}

func TestBinaryUsageAndHelp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, nil, "lists", "nope")
	require.Equal(t, cli.ExitUsage, r.code)
	r = run(t, dir, nil, "lists", "delete", "--help")
	require.Equal(t, cli.ExitOK, r.code)
	require.Contains(t, r.stdout, "subsync lists delete 12 --yes")
	// A delete with stdin not a terminal and no --yes is refused before anything is sent.
	_, edir, env := emulator(t)
	r = run(t, edir, env, "lists", "delete", "1")
	require.Equal(t, cli.ExitUsage, r.code)
	require.Contains(t, r.stderr, "pass --yes")
}
