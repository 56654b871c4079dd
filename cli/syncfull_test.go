package cli

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSyncFullWhileDeltaQueued: `sync NAME --full` while a delta run of that sync is queued
// does not exit 0 quietly: it fails and says the full run was not queued and why; a second
// delta request says it was folded into the queued run.
func TestSyncFullWhileDeltaQueued(t *testing.T) {
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

	queued := h.ok("sync", "members")
	r := h.run("", "sync", "members", "--full")
	require.Equal(t, ExitFailure, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
	require.Contains(t, r.stderr, `sync "members" --full was not queued: a delta run of it is queued as job `)
	require.Contains(t, queued, "job ")

	r = h.run("", "sync", "members")
	require.Equal(t, ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, `sync "members" is already queued or running as job `)
	require.Contains(t, r.stderr, "folded into it")
}
