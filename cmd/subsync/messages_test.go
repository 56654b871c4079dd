package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
)

// TestBinaryFailureMessages runs the built binary through its failure paths and checks each
// message: the exit code (2 for what the user must fix before anything runs, 1 for what ran
// and failed), no message line that repeats a segment ("open x: open x: …") or a line, the
// credential hint on a 401, and "did you mean" for a mistyped command or key, with its line.
func TestBinaryFailureMessages(t *testing.T) {
	t.Parallel()
	srv, dir, env := emulator(t)
	list := srv.CreateList("L")
	write := func(name, body string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		return path
	}
	csv := write("contacts.csv", "email\nada@example.com\n")
	write("old.xls", "x")
	write("bad.mapping.toml", "[columns\n")
	write("misfit.mapping.toml", "[columns]\nMail = \"email\"\n")
	write("bad.toml", "[api\n")
	write("typo.toml", "[api]\nuser_id = \"u\"\nbase_ur = \"https://example.com\"\n")
	write("mysql.toml", "[api]\nuser_id = \"u\"\n[database]\nurl = \"mysql://x\"\n")
	write("pgdown.toml", "[api]\nuser_id = \"u\"\n[database]\nurl = \"postgres://nobody@127.0.0.1:1/x?connect_timeout=5\"\n")
	write("down.toml", "[api]\nbase_url = \"http://127.0.0.1:1/api/public/v2\"\nuser_id = \"u\"\n[worker]\nmetrics_address = \"off\"\n")
	wrongKey := []string{"SUBSYNC_API_KEY=wrong-key"}
	listArg := fmt.Sprint(list)

	for _, tt := range []struct {
		env  []string
		args []string
		code int
		says []string
	}{
		{env, []string{"import", "missing.csv", "--list", listArg}, cli.ExitUsage, []string{"missing.csv: no such file or directory"}},
		{env, []string{"import", dir, "--list", listArg}, cli.ExitUsage, []string{"is a directory"}},
		{env, []string{"import", "old.xls", "--list", listArg}, cli.ExitUsage, []string{"save it as .xlsx or CSV"}},
		{env, []string{"preview", "missing.csv"}, cli.ExitUsage, []string{"missing.csv: no such file or directory"}},
		{env, []string{"preview", dir}, cli.ExitUsage, []string{"is a directory"}},
		{env, []string{"import", csv, "--list", listArg, "--mapping", "missing.mapping.toml"}, cli.ExitUsage, []string{"missing.mapping.toml"}},
		{env, []string{"import", csv, "--list", listArg, "--mapping", "bad.mapping.toml"}, cli.ExitUsage, []string{"bad.mapping.toml", "line 2"}},
		{env, []string{"preview", csv, "--mapping", "misfit.mapping.toml"}, cli.ExitUsage, []string{`no column "Mail"`}},
		{env, []string{"import", csv, "--list", "999999"}, cli.ExitUsage, []string{"--list 999999: the service has no such list"}},
		{env, []string{"--config", "nope.toml", "lists", "ls"}, cli.ExitUsage, []string{"nope.toml"}},
		{env, []string{"--config", "bad.toml", "lists", "ls"}, cli.ExitUsage, []string{"bad.toml:2:"}},
		{env, []string{"--config", "typo.toml", "config", "check"}, cli.ExitUsage, []string{"typo.toml:3: api.base_ur: unknown key (did you mean base_url?)"}},
		{env, []string{"lsts", "ls"}, cli.ExitUsage, []string{"did you mean lists?"}},
		{env, []string{"lists", "lss"}, cli.ExitUsage, []string{"did you mean ls?"}},
		{env, []string{"--config", "mysql.toml", "runs"}, cli.ExitUsage, []string{"database.url"}},
		{env, []string{"--config", "pgdown.toml", "runs"}, cli.ExitFailure, []string{"connection refused"}},
		{env, []string{"--config", "down.toml", "--service-timeout", "2s", "lists", "ls"}, cli.ExitFailure,
			[]string{"api.base_url http://127.0.0.1:1/api/public/v2 cannot be reached: connection refused"}},
		{env, []string{"--config", "down.toml", "--service-timeout", "2s", "import", csv, "--list", "1", "--wait"}, cli.ExitFailure,
			[]string{"api.base_url http://127.0.0.1:1/api/public/v2 cannot be reached: connection refused"}},
		{wrongKey, []string{"lists", "ls"}, cli.ExitFailure, []string{"401", "SUBSYNC_API_KEY"}},
		{wrongKey, []string{"fields", "ls"}, cli.ExitFailure, []string{"401", "SUBSYNC_API_KEY"}},
		{wrongKey, []string{"subscribers", "ls", "--list", listArg}, cli.ExitFailure, []string{"401", "SUBSYNC_API_KEY"}},
		{wrongKey, []string{"import", csv, "--list", listArg, "--wait"}, cli.ExitFailure, []string{"401", "SUBSYNC_API_KEY"}},
		{wrongKey, []string{"preview", csv, "--mapping", write("custom.mapping.toml", "[columns]\nemail = \"email\"\n\"x\" = \"custom:X\"\n")}, cli.ExitFailure, []string{"401", "SUBSYNC_API_KEY"}},
	} {
		r := run(t, dir, tt.env, tt.args...)
		require.Equal(t, tt.code, r.code, "%v: %s", tt.args, r.stderr)
		var messages []string
		for _, line := range strings.Split(r.stderr, "\n") {
			if m, ok := strings.CutPrefix(line, "subsync: "); ok {
				messages = append(messages, m)
			}
		}
		require.NotEmpty(t, messages, "%v: %s", tt.args, r.stderr)
		for _, s := range tt.says {
			require.Contains(t, strings.Join(messages, "\n"), s, tt.args)
		}
		for i, m := range messages {
			require.False(t, i > 0 && messages[i-1] == m, "%v: a line repeated: %q", tt.args, m)
			seen := map[string]bool{}
			for _, seg := range strings.Split(m, ": ") {
				seg = strings.TrimSpace(seg)
				require.False(t, seen[seg], "%v: %q repeats %q", tt.args, m, seg)
				seen[seg] = true
			}
		}
	}
}
