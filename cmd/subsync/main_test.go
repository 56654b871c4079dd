package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
)

// These tests run the built binary, as a user or a service manager would.

var binary, subsim, revision string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "subsync-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "subsync")
	subsim = filepath.Join(dir, "subsim")
	// The revision as the README says to stamp it when Go cannot (a git worktree, GOFLAGS
	// with -buildvcs=false): TestBinaryVersion checks that version prints it.
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		revision = strings.TrimSpace(string(out))
	}
	for _, b := range [][2]string{{binary, "."}, {subsim, "../subsim"}} {
		build := exec.Command("go", "build", "-ldflags", "-X github.com/subsync/subsync/cli.revision="+revision, "-o", b[0], b[1])
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "go build", b[1]+":", err)
			os.Exit(1)
		}
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

// startSubsim runs the standalone emulator on a free loopback port and returns its v2 and v3
// base URLs; it is stopped with SIGINT when the test ends.
func startSubsim(t *testing.T) (v2, v3 string) {
	t.Helper()
	cmd := exec.Command(subsim, "--addr", "127.0.0.1:0", "--user", "bin-user")
	cmd.Env = append(os.Environ(), "SUBSIM_KEY="+key)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for (v2 == "" || v3 == "") && sc.Scan() {
		kind, url, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "v2":
			v2 = url
		case "v3":
			v3 = url
		}
	}
	require.NotEmpty(t, v2, "subsim printed no v2 URL")
	require.NotEmpty(t, v3, "subsim printed no v3 URL")
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return v2, v3
}

func TestBinaryImportWaitAgainstSubsim(t *testing.T) {
	t.Parallel()
	v2, v3 := startSubsim(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "subsync.toml"), []byte(fmt.Sprintf(`
[api]
base_url = %q
legacy_base_url = %q
user_id = "bin-user"
[worker]
metrics_address = "off"
`, v2, v3)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "contacts.csv"),
		[]byte("E-post,Fornavn\nada@example.com,Ada\nnot-an-email,Bob\ngrace@example.com,Grace\n"), 0o600))
	env := []string{"SUBSYNC_API_KEY=" + key}

	r := run(t, dir, env, "lists", "create", "Imported", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var list sink.List
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))

	r = run(t, dir, env, "import", "contacts.csv", "--list", fmt.Sprint(list.ID), "--wait", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var res struct {
		ID     int64  `json:"id"`
		State  string `json:"state"`
		Counts struct {
			Read, Sent, Rejected int64
		} `json:"counts"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Equal(t, "completed", res.State)
	require.Equal(t, int64(3), res.Counts.Read)
	require.Equal(t, int64(2), res.Counts.Sent)
	require.Equal(t, int64(1), res.Counts.Rejected)
	require.Contains(t, r.stderr, `"msg":"run completed"`, "JSON logs on a non-terminal stderr")

	r = run(t, dir, env, "lists", "show", fmt.Sprint(list.ID), "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Equal(t, 2, list.SubscriberEmails)

	r = run(t, dir, env, "runs", fmt.Sprint(res.ID), "--rejects", "-")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "not-an-email")
}

func TestBinaryRunWorksQueuedImportAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	v2, v3 := startSubsim(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "subsync.toml"), []byte(fmt.Sprintf(`
[api]
base_url = %q
legacy_base_url = %q
user_id = "bin-user"
[worker]
metrics_address = "off"
[status]
schedule = "off"
`, v2, v3)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "contacts.csv"), []byte("email\nada@example.com\ngrace@example.com\n"), 0o600))
	env := []string{"SUBSYNC_API_KEY=" + key}

	r := run(t, dir, env, "lists", "create", "Worked", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var list sink.List
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))

	worker := exec.Command(binary, "--log-format", "json", "run")
	worker.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUBSYNC_") {
			worker.Env = append(worker.Env, kv)
		}
	}
	worker.Env = append(worker.Env, env...)
	logs, err := worker.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, worker.Start())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = worker.Process.Kill()
			_ = worker.Wait()
		}
	})
	lines := bufio.NewScanner(logs)
	waitFor := func(msg string) map[string]any {
		t.Helper()
		for lines.Scan() {
			var line map[string]any
			require.NoError(t, json.Unmarshal(lines.Bytes(), &line), lines.Text())
			require.NotContains(t, lines.Text(), key)
			if line["msg"] == msg {
				return line
			}
		}
		t.Fatalf("the worker ended its log without %q", msg)
		return nil
	}
	waitFor("worker started")

	r = run(t, dir, env, "import", "contacts.csv", "--list", fmt.Sprint(list.ID), "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	done := waitFor("run completed")
	require.EqualValues(t, 2, done["sent"])
	require.NotZero(t, done["run_id"], "the run id is on the lines of a run")
	require.NotZero(t, done["job_id"], "the job id is on the lines of a run")

	require.NoError(t, worker.Process.Signal(syscall.SIGTERM))
	go func() { _, _ = io.Copy(io.Discard, logs) }()
	err = worker.Wait()
	stopped = true
	require.NoError(t, err, "a worker stopped by SIGTERM exits 0")

	r = run(t, dir, env, "lists", "show", fmt.Sprint(list.ID), "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Equal(t, 2, list.SubscriberEmails)
}

func TestBinaryVersion(t *testing.T) {
	t.Parallel()
	if revision == "" && os.Getenv("CI") == "" {
		t.Skip("not built from a git checkout: no revision to stamp")
	}
	require.NotEmpty(t, revision, "CI builds from a git checkout")
	r := run(t, t.TempDir(), nil, "version")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "module:   github.com/subsync/subsync")
	require.Regexp(t, `(?m)^revision: `+revision+`( |$)`, r.stdout)
	require.Contains(t, r.stdout, "subsync dev-"+revision[:12])
}
