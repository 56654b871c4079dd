package cli

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSyncVerify: `sync NAME --verify` re-sends what the service's list lost and says so;
// with --full or --dry-run it is a usage error.
func TestSyncVerify(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	h.membersSync()
	h.ok("sync", "members", "--wait")
	ada, ok := h.srv.SubscriberByEmail("ada@example.com")
	require.True(t, ok)
	h.ok("subscribers", "delete", fmt.Sprint(ada.ID), "--yes")

	run := decode[runJSON](t, h.ok("sync", "members", "--verify", "--wait", "--json"))
	require.Equal(t, int64(1), run.Counts.Sent)
	require.Empty(t, run.Error, "a completed run has no error")
	require.Contains(t, run.Note, "1 rows it lacked and 0 it held with other values were sent")
	_, ok = h.srv.SubscriberByEmail("ada@example.com")
	require.True(t, ok)
	shown := h.ok("runs", fmt.Sprint(run.ID))
	require.Regexp(t, `note: +verified against the 1 subscribers of the service's list: 1 rows it lacked`, shown)

	for _, bad := range [][]string{{"--verify", "--full"}, {"--verify", "--dry-run"}} {
		r := h.run("", append([]string{"sync", "members"}, bad...)...)
		require.Equal(t, ExitUsage, r.code, r.stderr)
	}
}
