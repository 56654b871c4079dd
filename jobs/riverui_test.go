package jobs_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
)

// River UI is served under /riverui/ beside /metrics, over the runtime's queue, on both
// databases: its page loads and its job list API lists a queued job.
func TestRiverUI(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: filepath.Join(t.TempDir(), "crm.csv")}}}
		rt := b.open(t)
		id, err := rt.EnqueueSync(ctx, "crm", false)
		require.NoError(t, err)

		srv := httptest.NewServer(rt.Handler())
		defer srv.Close()
		page := get(t, srv.URL+"/riverui/")
		require.Contains(t, page, "<div id=\"root\"")
		require.Contains(t, page, "/riverui/")
		jobsJSON := get(t, srv.URL+"/riverui/api/jobs?state=available&limit=20")
		require.Contains(t, jobsJSON, fmt.Sprintf(`"id":%d`, id))
		require.Contains(t, jobsJSON, `"kind":"sync"`)
	})
}
