package jobs_test

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
)

// After a sync run, /metrics says when each sync last succeeded (a scheduled sync that never
// did says 0), counts its rows under its name, and shows the queue by state and the status feed's lag.
func TestMetricsLastSuccessPerSync(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		path := contacts(t, t.TempDir(), 20, nil)
		b.cfg.Syncs = []jobs.SyncSpec{
			{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path}},
			{Name: "never-run", ListID: b.listID, Source: sources.Config{Path: path}, Schedule: "@daily"},
			{Name: "on-demand", ListID: b.listID, Source: sources.Config{Path: path}},
		}
		rt := b.open(t)
		srv := httptest.NewServer(rt.Handler())
		defer srv.Close()

		before := get(t, srv.URL+"/metrics")
		require.Contains(t, before, `subsync_last_success_timestamp_seconds{kind="sync",sync="never-run"} 0`)
		require.NotContains(t, before, `sync="crm"`, "an on-demand sync that never ran has no gauge")
		require.NotContains(t, before, `sync="on-demand"`)
		require.NotContains(t, before, "subsync_status_feed_lag_seconds ")

		id, err := rt.EnqueueSync(ctx, "crm", false)
		require.NoError(t, err)
		run, err := rt.Wait(ctx, id, nil)
		require.NoError(t, err)
		pull, err := rt.EnqueueStatusPull(ctx)
		require.NoError(t, err)
		_, err = rt.Wait(ctx, pull, nil)
		require.NoError(t, err)

		body := get(t, srv.URL+"/metrics")
		m := regexp.MustCompile(`subsync_last_success_timestamp_seconds\{kind="sync",sync="crm"\} (\S+)`).FindStringSubmatch(body)
		require.NotNil(t, m, body)
		ts, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		require.InDelta(t, float64(run.FinishedAt.UnixNano())/1e9, ts, 0.001, "the gauge is the run's finish time")
		require.Contains(t, body, `subsync_last_success_timestamp_seconds{kind="sync",sync="never-run"} 0`)
		require.Contains(t, body, `subsync_last_success_timestamp_seconds{kind="status_pull",sync=""}`)
		require.Contains(t, body, `subsync_rows_total{kind="sync",outcome="sent",sync="crm"} 20`)
		require.Contains(t, body, `subsync_run_duration_seconds_count{kind="sync",outcome="completed",sync="crm"} 1`)
		require.Contains(t, body, `subsync_queue_jobs{state="completed"} 2`)
		require.Contains(t, body, `subsync_queue_jobs{state="available"} 0`)
		lag := regexp.MustCompile(`(?m)^subsync_status_feed_lag_seconds (\S+)$`).FindStringSubmatch(body)
		require.NotNil(t, lag, body)
		v, err := strconv.ParseFloat(lag[1], 64)
		require.NoError(t, err)
		require.Less(t, v, time.Hour.Seconds())
	})
}
