package main_test

import (
	"bytes"
	"context"
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
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
	"github.com/subsync/subsync/internal/testdisk"
	"github.com/subsync/subsync/sink/sinktest"
)

// fullDiskSetup writes a configuration whose data directory (the SQLite queue) is on a small
// disk, the database created, and a contacts file of n rows (every fifth one's address
// invalid, each row long) beside the configuration. It returns the directory, the small disk
// and the database's path.
func fullDiskSetup(t *testing.T, baseURL string, n int) (dir, disk, database string) {
	t.Helper()
	dir, disk = t.TempDir(), testdisk.Small(t, 8<<20)
	data := filepath.Join(disk, "data")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "subsync.toml"), []byte(fmt.Sprintf(`
[api]
base_url = %q
user_id = "bin-user"
[database]
data_dir = %q
[worker]
metrics_address = "off"
`, baseURL, data)), 0o600))
	var csv strings.Builder
	csv.WriteString("email,firstname,notes\n")
	for i := 1; i <= n; i++ {
		email := fmt.Sprintf("person%d@example.com", i)
		if i%5 == 0 {
			email = fmt.Sprintf("person%d-at-example.com", i)
		}
		fmt.Fprintf(&csv, "%s,Ola%d,%s\n", email, i, strings.Repeat("x", 80))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "contacts.csv"), []byte(csv.String()), 0o600))
	r := run(t, dir, []string{"SUBSYNC_API_KEY=" + key}, "jobs", "ls")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	return dir, disk, filepath.Join(data, "subsync.db")
}

// startImportWait starts import contacts.csv --wait in dir; the returned channel gives its
// end.
func startImportWait(t *testing.T, dir string, list int64) (*exec.Cmd, *bytes.Buffer, <-chan error) {
	t.Helper()
	cmd := exec.Command(binary, "--log-format", "json", "import", "contacts.csv", "--list", fmt.Sprint(list), "--wait")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUBSYNC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "SUBSYNC_API_KEY="+key)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return cmd, &stderr, exited
}

// TestBinaryImportWaitOnAFullDisk: import --wait whose run fills the disk under the SQLite
// queue fails within seconds with a message naming the database's path (#35 point 14: it
// hung 745 s, logging "disk is full" 516 times, retrying a full disk for ever).
func TestBinaryImportWaitOnAFullDisk(t *testing.T) {
	srv := sinktest.NewServer(t, sinktest.WithCredentials("bin-user", key))
	list := srv.CreateList("L")
	dir, disk, database := fullDiskSetup(t, srv.URL, 20_000)
	testdisk.Fill(t, disk, 128<<10)

	start := time.Now()
	_, stderr, exited := startImportWait(t, dir, list)
	var err error
	select {
	case err = <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("import --wait on a full disk did not end within a minute; it logged %q %d times",
			"disk is full", strings.Count(stderr.String(), "disk is full"))
	}
	took := time.Since(start)
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, stderr.String())
	require.Equal(t, cli.ExitFailure, exitErr.ExitCode(), stderr.String())
	t.Logf("failed in %s, %q logged %d times", took.Round(time.Millisecond), "disk is full",
		strings.Count(stderr.String(), "disk is full"))
	require.Less(t, took, 30*time.Second, "a full disk fails at once")
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := lines[len(lines)-1]
	require.Contains(t, last, database, "the error names the database's path")
	require.Contains(t, last, "is full")
	require.NotContains(t, stderr.String(), "retrying with backoff", "a full disk is not retried")
}

// TestBinaryImportWaitSIGTERMOnAFullDisk: import --wait whose disk fills while its run waits
// for the service honours SIGTERM at once, though it cannot record the job's cancellation
// (#35 point 14: SIGTERM was ignored).
func TestBinaryImportWaitSIGTERMOnAFullDisk(t *testing.T) {
	srv := sinktest.NewServer(t, sinktest.WithCredentials("bin-user", key))
	list := srv.CreateList("L")
	// The service answers everything but holds every bulkinsert until the client gives up:
	// the run is under way when the disk fills and the test sends SIGTERM.
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
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	dir, disk, _ := fullDiskSetup(t, front.URL+target.Path, 1_000)

	cmd, stderr, exited := startImportWait(t, dir, list)
	select {
	case <-sending:
	case err := <-exited:
		t.Fatalf("import --wait ended before its run sent anything (%v): %s", err, stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("the run never sent a batch: %s", stderr.String())
	}
	testdisk.Fill(t, disk, 0)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	signalled := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case err = <-exited:
	case <-ctx.Done():
		t.Fatalf("import --wait on a full disk ignored SIGTERM for a minute: %s", stderr.String())
	}
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, stderr.String())
	require.Equal(t, cli.ExitFailure, exitErr.ExitCode(), stderr.String())
	require.Less(t, time.Since(signalled), 15*time.Second, "SIGTERM is honoured at once: %s", stderr.String())
	require.Contains(t, stderr.String(), "interrupted")
}
