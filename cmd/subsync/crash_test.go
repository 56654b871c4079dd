package main_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
)

// A bug that kills the process must not look like a configuration error: the unit file
// restarts on any failure except cli.ExitUsage (2), which Go's runtime also uses for fatal
// errors and unrecovered panics unless told otherwise (issue 19 point 7).
func TestBinaryFatalErrorIsNotExitTwo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	crashing := filepath.Join(dir, "subsync-crashtest")
	build := exec.Command("go", "build", "-tags", "crashtest", "-o", crashing, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build -tags crashtest: %s", out)

	for _, c := range []struct{ mode, says string }{
		{"stack-overflow", "fatal error: stack overflow"},
		{"panic-in-goroutine", "panic: assignment to entry in nil map"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			cmd := exec.Command(crashing, "version")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "SUBSYNC_CRASHTEST="+c.mode)
			stderr, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the crash must fail the process: %v", err)
			require.NotEqual(t, cli.ExitUsage, exit.ExitCode(), "a crash exited with the configuration code")
			status := exit.Sys().(syscall.WaitStatus)
			require.True(t, status.Signaled(), "exit status %d, want death by SIGABRT", exit.ExitCode())
			require.Equal(t, syscall.SIGABRT, status.Signal())
			require.False(t, status.CoreDump(), "a core file would hold the API key")
			require.Contains(t, string(stderr), c.says, "the trace still says what went wrong")
		})
	}

	// The same binary without a crash exits 0 (TestBinaryConfigError shows exit 2 still means configuration).
	r := exec.Command(crashing, "version")
	r.Dir = dir
	require.NoError(t, r.Run())
}
