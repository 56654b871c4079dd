package testdb

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Throwaway is a Postgres server a test started for itself (initdb into a temporary
// directory, pg_ctl on a free port), so that the test may stop and start it: never the shared
// server of TEST_DATABASE_URL. It is stopped at cleanup.
type Throwaway struct {
	// URL reaches the server's postgres database as the postgres user.
	URL  string
	bin  string // the directory of initdb and pg_ctl
	dir  string // the data directory
	port int
	as   []string // the command prefix running a program as the server's user ("runuser -u postgres --" for root)
}

// StartPostgres initialises and starts a throwaway Postgres server from the installation in
// /usr/lib/postgresql/*/bin (or TEST_POSTGRES_BIN). Without one a test skips on a developer
// machine and fails when CI=true. Run as root, the server runs as the postgres user.
func StartPostgres(t testing.TB) *Throwaway {
	t.Helper()
	bin := os.Getenv("TEST_POSTGRES_BIN")
	if bin == "" {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		sort.Strings(found)
		if len(found) > 0 {
			bin = filepath.Dir(found[len(found)-1])
		}
	}
	if _, err := os.Stat(filepath.Join(bin, "pg_ctl")); bin == "" || err != nil {
		unavailable(t, "a Postgres installation (initdb, pg_ctl)", fmt.Errorf("none in /usr/lib/postgresql/*/bin: %v", err))
	}
	s := &Throwaway{bin: bin, dir: filepath.Join(t.TempDir(), "pgdata")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			unavailable(t, "the postgres user (Postgres refuses to run as root)", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.as = []string{"runuser", "-u", "postgres", "--"}
		// The server's user must reach the data directory through the test's directories.
		for d := filepath.Dir(s.dir); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatalf("throwaway postgres: %v", err)
			}
		}
		if err := os.Mkdir(s.dir, 0o700); err != nil {
			t.Fatalf("throwaway postgres: %v", err)
		}
		if err := os.Chown(s.dir, uid, gid); err != nil {
			t.Fatalf("throwaway postgres: %v", err)
		}
	}
	s.run(t, "initdb", "-D", s.dir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("throwaway postgres: a free port: %v", err)
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	s.Start(t)
	t.Cleanup(func() {
		cmd := s.command("pg_ctl", "stop", "-D", s.dir, "-m", "immediate", "-w")
		_ = cmd.Run()
	})
	return s
}

// Start starts the server (again) and returns once it accepts connections.
func (s *Throwaway) Start(t testing.TB) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100", s.port, s.dir)
	s.run(t, "pg_ctl", "start", "-D", s.dir, "-w", "-t", "60", "-l", filepath.Join(s.dir, "server.log"), "-o", opts)
}

// Stop stops the server at once, as a crash would (pg_ctl stop -m immediate: no checkpoint,
// every connection cut); the next Start recovers from the write-ahead log.
func (s *Throwaway) Stop(t testing.TB) {
	t.Helper()
	s.run(t, "pg_ctl", "stop", "-D", s.dir, "-m", "immediate", "-w")
}

// Log returns the server's log (for a failing test's output).
func (s *Throwaway) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return string(b)
}

func (s *Throwaway) command(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, s.as...), filepath.Join(s.bin, name)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = os.TempDir()
	return cmd
}

func (s *Throwaway) run(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := s.command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("throwaway postgres: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
