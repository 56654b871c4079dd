package jobs

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// A scheduled sync with no run for its tick, grace included, is reported once per tick; a
// run for the tick (queued at it, or started after it) is no miss.
func TestNotifyMissedSchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var got []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	}))
	defer hook.Close()
	messages := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
	dir := t.TempDir()
	src := sources.Config{Path: filepath.Join(dir, "crm.csv")}
	rt, err := Open(ctx, Config{DataDir: dir,
		Syncs: []SyncSpec{{Name: "nightly", ListID: 1, Schedule: "0 2 * * *", TimeZone: "Europe/Oslo", Source: src},
			{Name: "adhoc", ListID: 1, Source: src}},
		Notify: NotifySpec{WebhookURL: hook.URL, MissedScheduleGrace: 15 * time.Minute}})
	require.NoError(t, err)
	t.Cleanup(rt.Close)

	oslo, err := time.LoadLocation("Europe/Oslo")
	require.NoError(t, err)
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, oslo)
	tick := time.Date(2026, 3, 1, 2, 0, 0, 0, oslo)

	require.NoError(t, rt.checkMissed(ctx, since, tick.Add(10*time.Minute)))
	require.Empty(t, messages(), "still within the grace")
	require.NoError(t, rt.checkMissed(ctx, since, tick.Add(20*time.Minute)))
	require.Len(t, messages(), 1)
	require.Contains(t, messages()[0], `sync \"nightly\" missed its schedule`)
	require.NoError(t, rt.checkMissed(ctx, since, tick.Add(time.Hour)))
	require.Len(t, messages(), 1, "the same tick is reported once")

	// The next night's tick runs: no message.
	next := tick.Add(24 * time.Hour)
	_, err = rt.store.ClaimRun(ctx, state.Claim{JobID: 99, Kind: KindSync, Name: "nightly", ListID: 1,
		ScheduledAt: next, Owner: "o", Worker: "w", TTL: time.Minute})
	require.NoError(t, err)
	require.NoError(t, rt.checkMissed(ctx, since, next.Add(time.Hour)))
	require.Len(t, messages(), 1)
}
