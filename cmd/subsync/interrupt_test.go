package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
	"github.com/subsync/subsync/sink/sinktest"
)

// TestBinaryImportWaitCtrlCCancelsItsJob: Ctrl-C (SIGINT) while import --wait follows its run
// cancels the job it queued, says so, and leaves nothing queued or running.
func TestBinaryImportWaitCtrlCCancelsItsJob(t *testing.T) {
	t.Parallel()
	srv := sinktest.NewServer(t, sinktest.WithCredentials("bin-user", key))
	list := srv.CreateList("L")
	// The service answers everything but holds every bulkinsert until the client gives up:
	// the run is under way when the test presses Ctrl-C.
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	sending := make(chan struct{}, 1)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/subscribers/bulkinsert") {
			select {
			case sending <- struct{}{}:
			default:
			}
			_, _ = io.Copy(io.Discard, r.Body) // from here on, the server notices the client leave
			<-r.Context().Done()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "subsync.toml"), []byte(fmt.Sprintf(`
[api]
base_url = %q
user_id = "bin-user"
[worker]
metrics_address = "off"
`, front.URL+target.Path)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "contacts.csv"), []byte("email\nada@example.com\ngrace@example.com\n"), 0o600))
	env := []string{"SUBSYNC_API_KEY=" + key}

	cmd := exec.Command(binary, "--log-format", "json", "import", "contacts.csv", "--list", fmt.Sprint(list), "--wait")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUBSYNC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-sending:
	case err := <-exited:
		t.Fatalf("import --wait ended before its run sent anything (%v): %s", err, stderr.String())
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the run never sent a batch: %s", stderr.String())
	}
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	interrupted := time.Now()
	var exitErr *exec.ExitError
	select {
	case err := <-exited:
		require.ErrorAs(t, err, &exitErr, stderr.String())
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("import --wait did not end on Ctrl-C: %s", stderr.String())
	}
	require.Less(t, time.Since(interrupted), 15*time.Second, "Ctrl-C does not wait out the worker's 30 s soft stop: %s", stderr.String())
	require.Equal(t, cli.ExitFailure, exitErr.ExitCode(), stderr.String())
	require.NotContains(t, stderr.String(), key)
	require.NotContains(t, stderr.String(), "unreachable", "a stop is not the service failing")

	r := run(t, dir, env, "runs", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var runs []struct {
		JobID int64  `json:"job_id"`
		State string `json:"state"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &runs))
	require.Len(t, runs, 1, r.stdout)
	require.Equal(t, "cancelled", runs[0].State)
	require.Contains(t, stderr.String(), fmt.Sprintf("subsync: interrupted: job %d cancelled", runs[0].JobID))

	r = run(t, dir, env, "jobs", "ls", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.JSONEq(t, "[]", r.stdout, "no job is left queued or running")
}
