package main_test

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
)

// TestFatalErrorIsNotAConfigurationError: the binary, starved of memory, dies with a Go fatal
// error; its exit code must not be the one that tells a service manager "configuration
// error, do not restart", which an invalid configuration does exit with.
func TestFatalErrorIsNotAConfigurationError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, nil, "--config", filepath.Join(dir, "missing.toml"), "config", "check")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)

	// 200 MB of address space: the Go runtime cannot reserve its heap metadata.
	cmd := exec.CommandContext(t.Context(), "sh", "-c", `ulimit -v 200000 && exec "$0" config check`, binary)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "the starved binary exited normally: %v", err)
	require.Contains(t, stderr.String(), "fatal error", "not a Go fatal error")
	require.NotEqual(t, cli.ExitUsage, ee.ExitCode(), "a fatal error exits as a configuration error")
}
