package cli

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
)

// TestPruneCommand: prune --dry-run lists the runs whose rejects would go and deletes
// nothing; prune deletes the rejected rows older than retention.rejects (the run keeps its
// counts and says when they went); the keyed hash of an erased person is untouched.
func TestPruneCommand(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	h.membersSync()
	h.write(mustRead(t, h.config) + "\n[retention]\nrejects = \"1h\"\nschedule = \"off\"\n")
	sync := decode[runJSON](t, h.ok("sync", "members", "--wait", "--json"))
	require.Equal(t, int64(1), sync.Counts.Rejected)
	h.ok("forget", "ada@example.com", "--json")

	db, err := sql.Open("sqlite", filepath.Join(h.dir, "data", jobs.SQLiteFile))
	require.NoError(t, err)
	defer db.Close()
	count := func(q string) int {
		var n int
		require.NoError(t, db.QueryRow(q).Scan(&n))
		return n
	}
	require.Equal(t, 1, count("SELECT COUNT(*) FROM subsync_erased"))
	erasedHash := func() string {
		var h string
		require.NoError(t, db.QueryRow("SELECT hash FROM subsync_erased").Scan(&h))
		return h
	}
	hash := erasedHash()
	// The sync finished two hours ago.
	_, err = db.Exec("UPDATE subsync_run SET finished_at = finished_at - $1 WHERE id = $2", (2 * time.Hour).Microseconds(), sync.ID)
	require.NoError(t, err)

	plan := h.ok("prune", "--dry-run")
	require.Regexp(t, fmt.Sprintf(`(?m)^%d +sync +members +.* 1 +0 +0 +its rejects, warnings and removals$`, sync.ID), plan)
	require.Contains(t, plan, "dry run, nothing was deleted; subsync prune would delete 1 rejects")
	require.Contains(t, plan, "never pruned:")
	require.Equal(t, 1, count("SELECT COUNT(*) FROM subsync_reject"), "a dry run deletes nothing")
	dry := decode[pruneJSON](t, h.ok("prune", "--dry-run", "--json"))
	require.True(t, dry.DryRun)
	require.Len(t, dry.Runs, 1)
	require.Equal(t, sync.ID, dry.Runs[0].ID)

	out := h.ok("prune")
	require.Contains(t, out, "deleted 1 rejects, 0 warnings and 0 removals of 1 runs")
	require.Zero(t, count("SELECT COUNT(*) FROM subsync_reject"), "the rejects older than retention.rejects are gone")
	require.Equal(t, hash, erasedHash(), "the erased person's keyed hash is untouched")
	shown := h.ok("runs", fmt.Sprint(sync.ID))
	require.Regexp(t, `rejects: +deleted on .* by the retention policy`, shown)
	require.Regexp(t, `rejected: +1\n`, shown, "the counts stay")
	r := h.run("", "runs", fmt.Sprint(sync.ID), "--rejects", "-")
	require.Equal(t, ExitFailure, r.code)
	require.Contains(t, r.stderr, "its rejected rows were deleted on")

	// The erased person stays erased: the next sync rejects the row.
	again := decode[runJSON](t, h.ok("sync", "members", "--full", "--wait", "--json"))
	require.Equal(t, int64(2), again.Counts.Rejected, "the erased row and the invalid one")
}
