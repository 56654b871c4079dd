package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestForgetCommand: --dry-run says what would go and erases nothing; forget erases the
// person in the service, its run is the audit record without the address; a sync then
// rejects their row as erased; an argument that is no address is a usage error.
func TestForgetCommand(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	h.membersSync()
	h.ok("sync", "members", "--wait")

	plan := h.ok("forget", "Ada@Example.com", "--dry-run")
	require.Contains(t, plan, "ada@example.com")
	require.Contains(t, plan, "subsync_fingerprint 1")
	require.Contains(t, plan, "dry run: nothing was erased")
	_, ok := h.srv.SubscriberByEmail("ada@example.com")
	require.True(t, ok)

	requests := filepath.Join(h.dir, "requests.txt")
	require.NoError(t, os.WriteFile(requests, []byte("# erasure requests\n\nada@example.com\n"), 0o600))
	run := decode[runJSON](t, h.ok("forget", "--file", requests, "--json"))
	require.Equal(t, "completed", run.State)
	require.Equal(t, "forget", run.Kind)
	require.Nil(t, run.Counts, "an erasure sends no rows")
	require.Equal(t, map[string]int64{"people_erased": 1, "deleted_in_service": 1, "not_in_service": 0, "unmatched": 0}, run.Erasure)
	require.Equal(t, "1 erased, 1 deleted in the service", run.Summary)
	require.Empty(t, run.Error, "a successful erasure has no error")
	require.Contains(t, run.Note, "erased 1 person")
	require.NotContains(t, run.Note, "ada")
	_, ok = h.srv.SubscriberByEmail("ada@example.com")
	require.False(t, ok)
	require.Contains(t, h.ok("runs", "--kind", "forget"), "forget")

	again := decode[runJSON](t, h.ok("sync", "members", "--wait", "--json"))
	require.Equal(t, int64(2), again.Counts.Rejected, "the erased row and the invalid one")

	r := h.run("", "forget", "not-an-address")
	require.Equal(t, ExitUsage, r.code, r.stderr)
	r = h.run("", "forget")
	require.Equal(t, ExitUsage, r.code, r.stderr)
}
