package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/subsync/subsync/internal/testlog"
	"github.com/subsync/subsync/sink/sinktest"
)

// readURLs reads the "v2 URL" and "v3 URL" lines subsim prints on start.
func readURLs(t *testing.T, r io.Reader) (v2, v3 string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for _, want := range []string{"v2", "v3"} {
		require.True(t, sc.Scan(), "subsim printed no %s line: %v", want, sc.Err())
		name, url, ok := strings.Cut(sc.Text(), " ")
		require.True(t, ok)
		require.Equal(t, want, name)
		if want == "v2" {
			v2 = url
		} else {
			v3 = url
		}
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	return v2, v3
}

func call(t *testing.T, method, url, user, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.SetBasicAuth(user, key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// exercise creates and fetches a list with the right key, and is refused with a wrong one.
func exercise(t *testing.T, v2, v3, user, key string) {
	t.Helper()
	status, body := call(t, "POST", v2+"/subscriberlists", user, key, `{"title":"From subsim"}`)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"title":"From subsim"`)
	status, body = call(t, "GET", v2+"/subscriberlists/1", user, key, "")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"id":1`)
	status, body = call(t, "GET", v2+"/subscriberlists", user, "wrong", "")
	require.Equal(t, http.StatusUnauthorized, status)
	require.JSONEq(t, `{"status":"401 Unauthorized"}`, body)
	status, _ = call(t, "GET", v3+"/subscribers/1", user, "wrong", "")
	require.Equal(t, http.StatusUnauthorized, status)
}

func TestRunServesUntilCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr testlog.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--user", "U"}, outW, &stderr,
			func(k string) string { return map[string]string{"SUBSIM_KEY": "K-from-env"}[k] })
	}()
	v2, v3 := readURLs(t, outR)
	require.True(t, strings.HasPrefix(v2, "http://127.0.0.1:") && strings.HasSuffix(v2, "/api/public/v2"), v2)
	require.True(t, strings.HasSuffix(v3, "/api/v3"), v3)
	exercise(t, v2, v3, "U", "K-from-env")
	cancel()
	require.NoError(t, <-done)
	logs := stderr.String()
	require.Contains(t, logs, "path=/api/public/v2/subscriberlists")
	require.Contains(t, logs, "status=401")
	require.Contains(t, logs, "subsim stopped")
	require.NotContains(t, logs, "K-from-env", "the key is never logged")
}

func TestParseRefusesBadCommandLines(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no user", []string{"--key", "K"}, "--user is required"},
		{"no key", []string{"--user", "U"}, "--key or SUBSIM_KEY is required"},
		{"rate above 1", []string{"--user", "U", "--key", "K", "--error-rate", "1.5"}, "--error-rate must be between 0 and 1"},
		{"negative rate", []string{"--user", "U", "--key", "K", "--drop-rate", "-0.1"}, "--drop-rate must be between 0 and 1"},
		{"unknown flag", []string{"--user", "U", "--key", "K", "--fast"}, "flag provided but not defined: -fast"},
		{"stray argument", []string{"--user", "U", "--key", "K", "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(tt.args, io.Discard, noEnv)
			var usage *usageError
			require.ErrorAs(t, err, &usage)
			require.ErrorContains(t, err, tt.want)
		})
	}
	c, err := parse([]string{"--user", "U", "--key", "flag-key", "--seed", "7", "--latency", "5ms", "--error-rate", "0.1",
		"--429-rate", "0.2", "--retry-after", "3s", "--max-rps", "50", "--drop-rate", "0.05",
		"--status-wrapped", "--plain-401", "--active-revives"}, io.Discard, func(string) string { return "env-key" })
	require.NoError(t, err)
	require.Equal(t, "flag-key", c.key, "--key wins over SUBSIM_KEY")
	require.Equal(t, int64(7), c.faults.Seed)
	require.Equal(t, 5*time.Millisecond, c.faults.Latency)
	require.Equal(t, [4]float64{0.1, 0.2, 50, 0.05}, [4]float64{c.faults.ErrorRate, c.faults.TooManyRate, c.faults.MaxRPS, c.faults.DropRate})
	require.Equal(t, 3*time.Second, c.faults.RetryAfter)
	require.True(t, c.statusWrapped && c.plain401 && c.activeRevives)

	c, err = parse([]string{"--user", "U", "--key", "K", "--status-paged", "500", "--status-days", "--status-from-query",
		"--list-id-array-only", "--put-only", "--row-messages", "--status-link-paged", "25", "--omission-revives",
		"--by-list-ignores-status", "--consent-booleans", "--gender-values", "male,female", "--multiple-choice-arrays"}, io.Discard, noEnv)
	require.NoError(t, err)
	require.Equal(t, 500, c.statusPaged)
	require.Equal(t, 25, c.statusLinkPaged)
	require.Equal(t, "male,female", c.genderValues)
	require.True(t, c.omitRevives && c.byListAll && c.consentBooleans && c.multipleArrays)
	require.True(t, c.statusDays && c.statusFromQuery && c.listIDArrayOnly && c.putOnly && c.rowMessages)
}

// TestHelpListsTheSwitches: `go run ./cmd/subsim --help` lists every switch of the service's
// alternatives.
func TestHelpListsTheSwitches(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(t.Context(), "go", "run", ".", "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, flag := range []string{"-status-wrapped", "-status-paged", "-status-cap", "-status-days", "-status-from-query",
		"-list-id-array-only", "-put-only", "-row-messages", "-active-revives", "-plain-401"} {
		require.Contains(t, string(out), flag)
	}
	for _, sw := range sinktest.Switches() {
		if sw.Name != "" {
			require.Regexp(t, `(?m)^  -`+sw.Name+`\b`, string(out), "every switch of the matrix is a flag")
		}
	}
}

// TestBinary builds subsim, starts it on a free port, uses it and stops it with SIGTERM.
func TestBinary(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "subsim")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	cmd := exec.CommandContext(t.Context(), bin, "--addr", "127.0.0.1:0", "--user", "U")
	cmd.Env = append(os.Environ(), "SUBSIM_KEY=K")
	stdout, stdoutW := io.Pipe() // drained by readURLs, so that Wait's copy can finish
	cmd.Stdout = stdoutW
	var stderr testlog.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	v2, v3 := readURLs(t, stdout)
	exercise(t, v2, v3, "U", "K")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "subsim exits cleanly on SIGTERM; stderr:\n%s", stderr.String())
	require.Contains(t, stderr.String(), "subsim stopped")

	// A usage error exits 2.
	bad := exec.CommandContext(t.Context(), bin, "--user", "U")
	bad.Env = []string{}
	err = bad.Run()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	require.Equal(t, exitUsage, exitErr.ExitCode())
}
