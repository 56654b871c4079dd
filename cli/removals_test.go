package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSyncRemovalsCommand: with removed = "unsubscribe" and max_removals = 1 in the
// configuration, a sync whose source lost two people stops before unsubscribing anyone and
// exits 1 saying how many would go; the dry run says the same; with --allow-removals the dry
// run lists them, the run unsubscribes them, and `runs ID` counts them. A verifying run
// (--verify) keeps the guard and takes --allow-removals as well.
func TestSyncRemovalsCommand(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := filepath.Join(h.dir, "members.csv")
	write := func(body string) { require.NoError(t, os.WriteFile(file, []byte("E-post;Fornavn\n"+body), 0o600)) }
	write("ada@example.com;Ada\ngrace@example.com;Grace\nalan@example.com;Alan\n")
	h.write(mustRead(t, h.config) + fmt.Sprintf(`
[[syncs]]
name = "members"
list = %d
removed = "unsubscribe"
max_removals = 1
source = { path = %q }
`, list, filepath.Base(file)))

	first := decode[runJSON](t, h.ok("sync", "members", "--wait", "--json"))
	require.Equal(t, int64(3), first.Counts.Sent)

	write("ada@example.com;Ada\n")
	plan := h.ok("sync", "members", "--dry-run")
	require.Contains(t, plan, "removals stopped: 2 people would be unsubscribed (2 who left the source")
	r := h.run("", "sync", "members", "--wait")
	require.Equal(t, ExitFailure, r.code, r.stdout)
	require.Contains(t, r.stdout+r.stderr, "removals stopped: 2 people")
	for _, s := range h.srv.ListSubscribers(list) {
		require.Equal(t, "active", s.Lists[list].Status, s.Email)
	}

	plan = h.ok("sync", "members", "--dry-run", "--allow-removals", "--plan", "-")
	require.Contains(t, plan, "grace@example.com,remove,unsubscribed")
	require.Contains(t, plan, "alan@example.com,remove,unsubscribed")
	run := decode[runJSON](t, h.ok("sync", "members", "--allow-removals", "--wait", "--json"))
	require.Equal(t, int64(2), run.Counts.Removed)
	shown := decode[runJSON](t, h.ok("runs", strconv.FormatInt(run.ID, 10), "--json"))
	require.Equal(t, int64(2), shown.Counts.Removed)
	require.Contains(t, h.ok("runs", strconv.FormatInt(run.ID, 10)), "removed")
	// runs ID says who left, and --removed names them.
	require.Equal(t, &removalsJSON{Left: 2}, shown.Removals)
	require.Contains(t, h.ok("runs", strconv.FormatInt(run.ID, 10)), "2 who left the source, 0 old addresses of changed keys")
	listed := h.ok("runs", strconv.FormatInt(run.ID, 10), "--removed")
	require.Regexp(t, `alan@example.com\s+left the source`, listed)
	require.Regexp(t, `grace@example.com\s+left the source`, listed)
	require.NotContains(t, listed, "ada@example.com")
	require.ElementsMatch(t, []removedJSON{{Email: "alan@example.com", Why: "left"}, {Email: "grace@example.com", Why: "left"}},
		decode[[]removedJSON](t, h.ok("runs", strconv.FormatInt(run.ID, 10), "--removed", "--json")))
	for _, s := range h.srv.ListSubscribers(list) {
		want := "unsubscribed"
		if s.Email == "ada@example.com" {
			want = "active"
		}
		require.Equal(t, want, s.Lists[list].Status, s.Email)
	}

	// A verifying run keeps the guard, and --allow-removals lets it through too.
	write("ada@example.com;Ada\nbob@example.com;Bob\ncy@example.com;Cy\n")
	h.ok("sync", "members", "--wait")
	write("ada@example.com;Ada\n")
	r = h.run("", "sync", "members", "--verify", "--wait")
	require.Equal(t, ExitFailure, r.code, r.stdout)
	require.Contains(t, r.stdout+r.stderr, "removals stopped: 2 people")
	verified := decode[runJSON](t, h.ok("sync", "members", "--verify", "--allow-removals", "--wait", "--json"))
	require.Equal(t, int64(2), verified.Counts.Removed)
}
