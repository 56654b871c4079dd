package cli

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

// TestStatusShowsPendingWriteBacks: a write-back that cannot be written (its directory is a
// file) leaves the change pending; `subsync status` shows it with the error; once the path
// works, the next pull writes it and nothing is pending.
func TestStatusShowsPendingWriteBacks(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := contacts(t, h.dir)
	blocker := filepath.Join(h.dir, "out")
	require.NoError(t, os.WriteFile(blocker, []byte("not a directory"), 0o600))
	h.write(mustRead(t, h.config) + fmt.Sprintf(`
[status]
schedule = "off"
[status.write_back]
kind = "csv"
path = "out/changes.csv"
[[syncs]]
name = "members"
list = %d
source = { path = %q }
`, list, filepath.Base(file)))

	require.Contains(t, h.ok("status"), "never pulled")
	h.ok("sync", "members", "--wait")
	require.NoError(t, h.srv.SetStatus("ada@example.com", list, sink.StatusUnsubscribed))
	require.NoError(t, h.srv.SetStatus("grace@example.com", list, sink.StatusBounce))

	pull := decode[runJSON](t, h.ok("status", "pull", "--wait", "--json"))
	require.Equal(t, "completed", pull.State)
	require.Nil(t, pull.Counts, "a status pull sends no rows")
	require.Equal(t, int64(2), pull.Changes["read"])
	require.Equal(t, int64(2), pull.Changes["recorded"])
	require.Zero(t, pull.Changes["written_back"])
	require.Equal(t, int64(1), pull.Changes["requests"], "the feed was read in one request")
	require.Equal(t, "2 changes read, 2 recorded", pull.Summary)
	require.Empty(t, pull.Error, "a completed run has no error")
	require.Contains(t, pull.Note, "csv write-back to "+filepath.Join(h.dir, "out", "changes.csv")+" failed")

	st := decode[statusJSON](t, h.ok("status", "--json"))
	require.NotNil(t, st.Cursor)
	require.Equal(t, map[string]int64{"unsubscribed": 1, "bounce": 1}, st.Totals)
	require.Len(t, st.WriteBacks, 1)
	require.Equal(t, int64(2), st.WriteBacks[0].Pending)
	require.Equal(t, int64(2), st.WriteBacks[0].Failing)
	require.Contains(t, st.WriteBacks[0].LastError, "not a directory")
	require.Len(t, st.Pending, 2)
	require.Equal(t, "ada@example.com", st.Pending[0].Email)
	require.Equal(t, "unsubscribed", st.Pending[0].Status)
	require.Equal(t, 1, st.Pending[0].Attempts)
	text := h.ok("status")
	for _, want := range []string{"changes pulled up to", "Suppression list:", "unsubscribed", "bounce",
		"Pending write-backs", "ada@example.com", "grace@example.com", "not a directory"} {
		require.Contains(t, text, want)
	}

	require.NoError(t, os.Remove(blocker))
	pull = decode[runJSON](t, h.ok("status", "pull", "--wait", "--json"))
	require.Equal(t, int64(2), pull.Changes["written_back"])
	require.Empty(t, pull.Error)
	require.Empty(t, pull.Note)
	shown := h.ok("runs", fmt.Sprint(pull.ID))
	require.Regexp(t, `changes read: +2\n`, shown)
	require.Regexp(t, `written back: +2\n`, shown)
	require.NotRegexp(t, `(?m)^(sent|rows read|rejected):`, shown, "no words of an import")
	st = decode[statusJSON](t, h.ok("status", "--json"))
	require.Zero(t, st.WriteBacks[0].Pending)
	require.Equal(t, int64(2), st.WriteBacks[0].Done)
	require.Empty(t, st.Pending)
	recs, err := csv.NewReader(strings.NewReader(mustRead(t, filepath.Join(h.dir, "out", "changes.csv")))).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 3)
	require.Equal(t, "ada@example.com", recs[1][1])
	require.Equal(t, "grace@example.com", recs[2][1])

	// A reconciliation finds the same two, already known.
	rec := decode[runJSON](t, h.ok("status", "reconcile", "--wait", "--json"))
	require.Equal(t, "completed", rec.State)
	require.Equal(t, int64(2), rec.Reconciled["found"])
	require.Equal(t, int64(2), rec.Reconciled["already_known"])
	require.Equal(t, int64(0), rec.Reconciled["recorded"])
	require.Positive(t, rec.Reconciled["requests"])
}

// TestDryRun: sync and import --dry-run send nothing and print the plan; --plan writes one
// CSV line per source row; the real run then does what the plan said.
func TestDryRun(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := contacts(t, h.dir)
	h.write(mustRead(t, h.config) + fmt.Sprintf(`
[[syncs]]
name = "members"
list = %d
source = { path = %q }
`, list, filepath.Base(file)))

	plan := decode[planJSON](t, h.ok("sync", "members", "--dry-run", "--json"))
	require.Equal(t, planJSON{DryRun: true, Read: 3, Send: 2, SendByStatus: map[string]int64{"": 2}, Rejected: 1,
		RejectsByCode: map[string]int64{"invalid_email": 1}}, plan)
	require.Empty(t, h.srv.ListSubscribers(list), "a dry run sends nothing")
	require.Empty(t, decode[[]jobJSON](t, h.ok("jobs", "ls", "--json")), "and queues nothing")

	planFile := filepath.Join(h.dir, "plan.csv")
	text := h.ok("sync", "members", "--dry-run", "--plan", planFile)
	for _, want := range []string{"nothing was sent", "would send:", "2 (without a status 2)", "rejected:",
		"1 (invalid_email 1)", planFile} {
		require.Contains(t, text, want)
	}
	recs, err := csv.NewReader(strings.NewReader(mustRead(t, planFile))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, [][]string{
		{"line", "sheet", "email", "action", "status", "status_mobile", "code", "column", "value", "reason"},
		{"2", "", "ada@example.com", "send", "", "", "", "", "", ""},
		{"3", "", "", "rejected", "", "", "invalid_email", "E-post", "'=cmd|x", recs[2][9]},
		{"4", "", "grace@example.com", "send", "", "", "", "", "", ""},
	}, recs)

	run := decode[runJSON](t, h.ok("sync", "members", "--wait", "--json"))
	require.Equal(t, plan.Send, run.Counts.Sent)

	// Now everything is unchanged; the plan on stdout, the summary on stderr.
	r := h.run("", "sync", "members", "--dry-run", "--plan", "-")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "2,,ada@example.com,unchanged,")
	require.Contains(t, r.stderr, "unchanged:")

	// An import plans without the delta.
	plan = decode[planJSON](t, h.ok("import", file, "--list", fmt.Sprint(list), "--dry-run", "--json"))
	require.Equal(t, int64(2), plan.Send)

	r = h.run("", "import", file, "--list", "999", "--dry-run")
	require.Equal(t, ExitUsage, r.code, "refused before anything runs")
	require.Contains(t, r.stderr, "--list 999: the service has no such list")

	for _, args := range [][]string{
		{"sync", "members", "--plan", "x.csv"},
		{"sync", "members", "--dry-run", "--wait"},
		{"sync", "members", "--dry-run", "--plan", "-", "--json"},
		{"import", file, "--list", "1", "--plan", "x.csv"},
	} {
		r := h.run("", args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
	}
}
