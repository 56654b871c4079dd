package main_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
)

// TestBinaryFirstContact walks the first minutes of a new user with the built binary.
func TestBinaryFirstContact(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	noXDG := []string{"XDG_CONFIG_HOME=" + filepath.Join(home, "xdg"), "HOME=" + home}

	// The copied example passes config check as is, with the credentials in the environment
	// as the README's first step sets them (nothing else: no CRM_DSN).
	dir := t.TempDir()
	example, err := os.ReadFile(filepath.Join("..", "..", "config.example.toml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "subsync.toml"), example, 0o600))
	creds := append([]string{"SUBSYNC_USER_ID=12345", "SUBSYNC_API_KEY=example-key"}, noXDG...)
	r := run(t, dir, creds, "config", "check")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "subsync.toml: OK")
	r = run(t, dir, noXDG, "config", "path")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, filepath.Join(dir, "subsync.toml")+"\n", r.stdout)

	// Without any configuration a command that keeps state exits 2 and creates nothing.
	empty := t.TempDir()
	for _, args := range [][]string{{"import", "x.csv", "--list", "1"}, {"runs"}, {"migrate"}} {
		r = run(t, empty, noXDG, args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", args, r.stderr)
	}
	require.Contains(t, r.stderr, "no configuration file found")
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing is created")

	// import --wait against an address nobody listens on fails fast, naming api.base_url,
	// and leaves nothing queued.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "subsync.toml"), []byte(`
[api]
base_url = "http://`+addr+`/api/public/v2"
user_id = "u"
[worker]
metrics_address = "off"
`), 0o600))
	csv := filepath.Join(work, "contacts.csv")
	require.NoError(t, os.WriteFile(csv, []byte("email\nada@example.com\n"), 0o600))
	env := append([]string{"SUBSYNC_API_KEY=" + key}, noXDG...)
	start := time.Now()
	r = run(t, work, env, "import", csv, "--list", "1", "--wait")
	require.NotEqual(t, cli.ExitOK, r.code)
	require.Less(t, time.Since(start), 35*time.Second)
	require.Contains(t, r.stderr, "api.base_url http://"+addr)
	require.Contains(t, r.stderr, "connection refused")
	r = run(t, work, env, "jobs", "ls", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var jobs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &jobs))
	require.Empty(t, jobs, "no job left queued")

	// A directory and an .xls are refused with exit 2, and no run is recorded.
	xls := filepath.Join(work, "old.xls")
	require.NoError(t, os.WriteFile(xls, []byte("x"), 0o600))
	for _, f := range []string{work, xls} {
		r = run(t, work, env, "import", f, "--list", "1")
		require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	}
	r = run(t, work, env, "runs", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &runs))
	require.Empty(t, runs)
}
