package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// suppressedTotal is how many people the suppression list holds, over every list.
func suppressedTotal(t *testing.T, rt *jobs.Runtime) int64 {
	t.Helper()
	o, err := rt.StatusOverview(context.Background())
	require.NoError(t, err)
	var n int64
	for _, s := range o.Suppressed {
		n += s.Count
	}
	return n
}

// TestStatusPullUnreadableAnswer: a status answer with an entry subsync cannot read, or of a
// shape it does not know, fails the pull with the shape expected and the entry masked,
// records nothing, and leaves the cursor where it was.
func TestStatusPullUnreadableAnswer(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		t.Run("entry", func(t *testing.T) {
			b := setup(t, backend)
			b.subscribe(t, contactEmail(1), contactEmail(2), contactEmail(3))
			require.NoError(t, b.emu.SetStatus(contactEmail(1), b.listID, "unsubscribed"))
			rt := b.open(t)
			id, err := rt.EnqueueStatusPull(ctx)
			first := waitRun(t, rt, id, err)
			require.Equal(t, int64(1), first.Counts.Read)
			before, err := rt.StatusOverview(ctx)
			require.NoError(t, err)
			require.False(t, before.Cursor.IsZero())

			require.NoError(t, b.emu.SetStatus(contactEmail(2), b.listID, "bounce"))
			b.emu.AddStatusEntry(`{"id": 99, "email": "kari.nordmann@example.com", "firstname": "Kari", "mobile": "+4791234567", "date_updated": "2024-03-01T10:00:00Z"}`)
			id, err = rt.EnqueueStatusPull(ctx)
			require.NoError(t, err)
			run, err := rt.Wait(ctx, id, nil)
			require.ErrorIs(t, err, jobs.ErrRunFailed)
			require.Equal(t, state.RunFailed, run.State)
			require.Equal(t, 1, run.Attempts, "the same answer would come again: no retries")
			require.Contains(t, run.Error, "no status")
			require.Contains(t, run.Error, sink.StatusEntryShape)
			require.Contains(t, run.Error, `"email": "***@example.com", "firstname": "***", "id": 99, "mobile": "***"`)
			require.NotContains(t, run.Error, "kari")
			require.NotContains(t, run.Error, "91234567")
			require.Zero(t, run.Counts.Read)

			after, err := rt.StatusOverview(ctx)
			require.NoError(t, err)
			require.Equal(t, before.Cursor, after.Cursor, "the cursor did not move")
			require.Equal(t, int64(1), suppressedTotal(t, rt), "the bounce in the same answer was not recorded")
		})
		t.Run("shape", func(t *testing.T) {
			b := setup(t, backend, sinktest.WithStatusWrapKey("subscriber_changes"))
			b.subscribe(t, contactEmail(1))
			require.NoError(t, b.emu.SetStatus(contactEmail(1), b.listID, "unsubscribed"))
			rt := b.open(t)
			id, err := rt.EnqueueStatusPull(ctx)
			require.NoError(t, err)
			run, err := rt.Wait(ctx, id, nil)
			require.ErrorIs(t, err, jobs.ErrRunFailed)
			require.Contains(t, run.Error, `an object with members {"subscriber_changes"}; want a JSON array of entries`)
			o, err := rt.StatusOverview(ctx)
			require.NoError(t, err)
			require.True(t, o.Cursor.IsZero(), "no cursor")
			require.Zero(t, suppressedTotal(t, rt))
		})
	})
}

// TestStatusPullPaged25000: a paged feed of 25,000 changes is read to its end: every change
// recorded, every person suppressed; the second pull records nothing.
func TestStatusPullPaged25000(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		const n = 25_000
		b := setup(t, backend, sinktest.WithStatusPaged(1000))
		emails := make([]string, n)
		for i := range emails {
			emails[i] = contactEmail(i + 1)
		}
		b.subscribe(t, emails...)
		for i, e := range emails {
			status := "unsubscribed"
			if i%5 == 0 {
				status = "bounce"
			}
			require.NoError(t, b.emu.SetStatus(e, b.listID, status))
		}
		// Recording 25,000 changes in one SQLite transaction can hold the database longer
		// than the tests' 1s lease, and another attempt would take the run over: the default.
		b.cfg.LeaseTTL = jobs.LeaseTTLDefault
		rt := b.open(t)
		id, err := rt.EnqueueStatusPull(ctx)
		pull := waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: n, Requests: 25}, pull.Counts)
		require.Empty(t, pull.Error)
		require.Equal(t, int64(n), suppressedTotal(t, rt), "every person suppressed")
		sup, err := rt.State().Suppressed(ctx, b.listID, []string{emails[0], emails[n-1]})
		require.NoError(t, err)
		require.Equal(t, map[string]string{emails[0]: "bounce", emails[n-1]: "unsubscribed"}, sup)
		pages := 0
		for _, r := range b.emu.Requests() {
			if r.Path == sinktest.V2Prefix+"/subscriberstatus" {
				pages++
			}
		}
		require.Equal(t, n/1000, pages)

		id, err = rt.EnqueueStatusPull(ctx)
		again := waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: n, Duplicates: n, Requests: n / 1000}, again.Counts, "the second pull records nothing")
		require.Equal(t, int64(n), suppressedTotal(t, rt))
	})
}

// TestStatusPullReadCountedOnce: a pull stopped during its write-back, after it recorded the
// changes, reads them again on its next attempt; the run counts them once.
func TestStatusPullReadCountedOnce(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		crm := newCRM(t, 20)
		for i := 1; i <= 20; i++ {
			b.subscribe(t, contactEmail(i))
		}
		for i := 1; i <= 5; i++ {
			require.NoError(t, b.emu.SetStatus(contactEmail(i), b.listID, "unsubscribed"))
		}
		b.cfg.StatusPull.WriteBack = crm.writeBack()
		b.cfg.ShutdownTimeout = 100 * time.Millisecond
		rt := b.open(t)

		// The write-back waits on a lock the test holds.
		tx, err := crm.pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, "LOCK TABLE contacts IN ACCESS EXCLUSIVE MODE")
		require.NoError(t, err)

		id, err := rt.EnqueueStatusPull(ctx)
		require.NoError(t, err)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- rt.Run(runCtx) }()
		waitFor(t, time.Minute, "the changes recorded", func() bool { return runOf(t, rt.State(), id).Counts.Read == 5 })
		stop()
		require.NoError(t, <-done)
		paused := runOf(t, rt.State(), id)
		require.NotEqual(t, state.RunCompleted, paused.State, "stopped in its write-back")
		require.NoError(t, tx.Rollback(ctx))

		run := waitRun(t, rt, id, nil)
		require.Equal(t, state.RunCompleted, run.State)
		require.GreaterOrEqual(t, run.Attempts, 2)
		require.Equal(t, state.Counts{Read: 5, Sent: 5, Requests: 2}, run.Counts, "read once, though two attempts read it")
		got, writes := crm.statuses(t)
		require.Equal(t, map[string]int{"": 15, "unsubscribed": 5}, got)
		require.Equal(t, 5, writes)
	})
}

// TestReconcileOnItsOwn: a reconciliation job finds an unsubscribe the status feed never
// shows (older than its window), records it for write-back, and the next pull writes it back;
// a second reconciliation finds nothing new.
func TestReconcileOnItsOwn(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		var offset atomic.Int64 // the emulator's clock, relative to now
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		b := setup(t, backend, sinktest.WithClock(clock))
		b.subscribe(t, "a@example.com", "b@example.com")
		offset.Store(int64(-40 * 24 * time.Hour)) // outside the feed's default 30-day window
		require.NoError(t, b.emu.SetStatus("a@example.com", b.listID, "unsubscribed"))
		offset.Store(0)

		path := filepath.Join(t.TempDir(), "status-changes.csv")
		b.cfg.StatusPull.WriteBack = jobs.WriteBackSpec{Kind: jobs.WriteBackCSV, Path: path}
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "n", ListID: b.listID, Source: sources.Config{Path: "unused.csv"}}}
		rt := b.open(t)
		id, err := rt.EnqueueStatusPull(ctx)
		pull := waitRun(t, rt, id, err)
		require.Zero(t, pull.Counts.Read, "the feed does not show it")

		id, err = rt.EnqueueReconcile(ctx)
		rec := waitRun(t, rt, id, err)
		require.Equal(t, "reconcile", rec.Name)
		require.Equal(t, state.Counts{Read: 1, Requests: 2}, rec.Counts)
		sup, err := rt.State().Suppressed(ctx, b.listID, []string{"a@example.com", "b@example.com"})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"a@example.com": "unsubscribed"}, sup)

		id, err = rt.EnqueueStatusPull(ctx)
		pull = waitRun(t, rt, id, err)
		require.Equal(t, int64(1), pull.Counts.Sent, "the next pull writes it back")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(data), "a@example.com,unsubscribed")

		id, err = rt.EnqueueReconcile(ctx)
		rec = waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Requests: 2}, rec.Counts, "since the last reconciliation minus a day: nothing updated")
	})
}

// TestStatusLoopEverySwitch runs the status loop — import, the service records unsubscribes
// and bounces, pull, suppress, write back, import again — against the emulator in each of its
// alternatives (sinktest.Switches).
func TestStatusLoopEverySwitch(t *testing.T) {
	t.Parallel()
	for _, sw := range sinktest.Switches() {
		t.Run("switch="+sw.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, "sqlite", sw.Options...)
			b.cfg.Sink.ListIDArray = sw.ListIDArray
			path := filepath.Join(t.TempDir(), "status-changes.csv")
			b.cfg.StatusPull.WriteBack = jobs.WriteBackSpec{Kind: jobs.WriteBackCSV, Path: path}
			rt := b.open(t)
			file := contacts(t, t.TempDir(), 20, nil)

			id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: file, ListID: b.listID})
			imp := waitRun(t, rt, id, err)
			require.Equal(t, int64(20), imp.Counts.Sent)
			for i := 1; i <= 5; i++ {
				status := "unsubscribed"
				if i > 3 {
					status = "bounce"
				}
				require.NoError(t, b.emu.SetStatus(fmt.Sprintf("person%d@example.com", i), b.listID, status))
			}

			id, err = rt.EnqueueStatusPull(ctx)
			pull := waitRun(t, rt, id, err)
			require.Positive(t, pull.Counts.Requests, "the feed's pages are counted")
			require.Equal(t, state.Counts{Read: 5, Sent: 5, Requests: pull.Counts.Requests}, pull.Counts)
			require.Empty(t, pull.Error)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, 6, strings.Count(string(data), "\n"), "a header and the 5 changes written back")

			id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: file, ListID: b.listID})
			again := waitRun(t, rt, id, err)
			require.Equal(t, int64(5), again.Counts.Suppressed)
			require.Equal(t, int64(15), again.Counts.Sent)
			for i := 1; i <= 5; i++ {
				s, _ := b.emu.SubscriberByEmail(fmt.Sprintf("person%d@example.com", i))
				require.NotEqual(t, "active", s.Lists[b.listID].Status, "person%d stays suppressed", i)
			}

			id, err = rt.EnqueueStatusPull(ctx)
			second := waitRun(t, rt, id, err)
			require.Equal(t, state.Counts{Read: 5, Duplicates: 5, Requests: pull.Counts.Requests}, second.Counts, "nothing new")
		})
	}
}

// TestStatusPullCappedFeed: a feed that answers at most 100 changes with no paging hint, and
// the same 100 for page 2, fails the pull with the evidence; the 100 read are recorded, and
// the cursor does not pass the day they came from. The reconciliation then catches what the
// feed left out.
func TestStatusPullCappedFeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "sqlite", sinktest.WithStatusCap(100))
	emails := make([]string, 150)
	for i := range emails {
		emails[i] = contactEmail(i + 1)
	}
	b.subscribe(t, emails...)
	for _, e := range emails {
		require.NoError(t, b.emu.SetStatus(e, b.listID, "unsubscribed"))
	}
	b.cfg.Syncs = []jobs.SyncSpec{{Name: "n", ListID: b.listID, Source: sources.Config{Path: "unused.csv"}}}
	rt := b.open(t)
	id, err := rt.EnqueueStatusPull(ctx)
	require.NoError(t, err)
	pull, err := rt.Wait(ctx, id, nil)
	require.ErrorIs(t, err, jobs.ErrRunFailed)
	require.Equal(t, state.RunFailed, pull.State)
	require.Equal(t, 1, pull.Attempts, "the same answer would come again: no retries")
	require.Equal(t, int64(100), pull.Counts.Read)
	require.Contains(t, pull.Error, "answered 100 changes")
	require.Contains(t, pull.Error, "asking for page 2 answered the same")
	require.Contains(t, pull.Error, "the cursor stays")
	require.Equal(t, int64(100), suppressedTotal(t, rt), "what was read is recorded")
	o, err := rt.StatusOverview(ctx)
	require.NoError(t, err)
	require.True(t, o.Cursor.IsZero(), "the first pull read the service's default window: the cursor cannot move")

	id, err = rt.EnqueueReconcile(ctx)
	rec := waitRun(t, rt, id, err)
	require.Positive(t, rec.Counts.Requests, "the pages of by_list are counted")
	require.Equal(t, state.Counts{Read: 150, Duplicates: 100, Requests: rec.Counts.Requests}, rec.Counts)
	require.Equal(t, int64(150), suppressedTotal(t, rt), "every person suppressed")
}

// TestStatusGapCursor: the cursor stops at the earliest gap a reconciliation has not covered
// since it ended, and moves to the end of the read when every gap is covered.
func TestStatusGapCursor(t *testing.T) {
	t.Parallel()
	day := func(d int) time.Time { return time.Date(2025, 3, d, 0, 0, 0, 0, time.UTC) }
	to := day(5).Add(10 * time.Hour)
	gaps := []sink.StatusGap{{From: day(2), To: day(3).Add(-time.Millisecond)}, {From: day(4), To: day(5).Add(-time.Millisecond)}}
	pos, held := jobs.GapCursor(to, gaps, time.Time{})
	require.Equal(t, day(2), pos)
	require.Len(t, held, 2)
	pos, held = jobs.GapCursor(to, gaps, day(3).Add(time.Hour))
	require.Equal(t, day(4), pos, "the first gap is covered by a reconciliation since")
	require.Len(t, held, 1)
	pos, held = jobs.GapCursor(to, gaps, day(5))
	require.Equal(t, to, pos)
	require.Empty(t, held)
	pos, held = jobs.GapCursor(to, []sink.StatusGap{{Entries: 100}}, day(9))
	require.True(t, pos.IsZero(), "the service's default window: no bound to move to")
	require.Len(t, held, 1)
}

// TestStatusPullLinkPaged: a feed of 60 changes paged 25 at a time through Link headers only
// (a bare array for a body): one pull records all 60, and a second pull records nothing.
func TestStatusPullLinkPaged(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend, sinktest.WithStatusLinkPaged(25))
		emails := make([]string, 60)
		for i := range emails {
			emails[i] = contactEmail(i + 1)
		}
		b.subscribe(t, emails...)
		for i, e := range emails {
			require.NoError(t, b.emu.SetStatus(e, b.listID, []string{"unsubscribed", "bounce"}[i%2]))
		}
		rt := b.open(t)
		id, err := rt.EnqueueStatusPull(ctx)
		pull := waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 60, Requests: 3}, pull.Counts)
		require.Equal(t, int64(60), suppressedTotal(t, rt))
		pages := 0
		for _, r := range b.emu.Requests() {
			if r.Path == sinktest.V2Prefix+"/subscriberstatus" {
				pages++
			}
		}
		require.Equal(t, 3, pages)

		id, err = rt.EnqueueStatusPull(ctx)
		again := waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 60, Duplicates: 60, Requests: 3}, again.Counts, "the second pull records nothing new")
		require.Equal(t, int64(60), suppressedTotal(t, rt))
	})
}

// TestStatusPullBounded (#35 point 7): a feed whose every page names a new next page fails the
// pull at once, permanently (no retry), at the read's bound of pages; nothing is recorded and
// the cursor stays.
func TestStatusPullBounded(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		var n atomic.Int64
		endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i := n.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Link", fmt.Sprintf("<?page=%d&t=%d>; rel=\"next\"", i+1, i*7919))
			fmt.Fprintf(w, `[{"id":%d,"email":"p%d@example.com","status":"bounce","date_updated":%q}]`, i, i,
				time.Now().UTC().Format(time.RFC3339))
		}))
		t.Cleanup(endless.Close)
		b := setup(t, backend)
		b.cfg.Sink = sink.Config{BaseURL: endless.URL + "/api/public/v2", UserID: "u", APIKey: "k", RequestsPerSecond: -1,
			HTTPClient: endless.Client(), StatusMaxPages: 300}
		rt := b.open(t)
		id, err := rt.EnqueueStatusPull(ctx)
		require.NoError(t, err)
		run, err := rt.Wait(ctx, id, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Equal(t, state.RunFailed, run.State)
		require.Equal(t, 1, run.Attempts, "permanent: not retried")
		require.Contains(t, run.Error, "300 requests made, the most one read may make (status.max_pages)")
		require.Equal(t, int64(300), n.Load())
		require.Zero(t, suppressedTotal(t, rt))
		o, err := rt.StatusOverview(ctx)
		require.NoError(t, err)
		require.True(t, o.Cursor.IsZero())
	})
}
