package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// longAgoLeavers sets up, in an emulator that revives people on a push without a status,
// a list of 100 people of whom 50 unsubscribed and 20 bounced 40 days ago (outside the
// status feed's 30-day window), and a file of all of them and 10 new ones; it returns the
// bundle and the file. person1..50 unsubscribed, person51..70 bounced.
func longAgoLeavers(t *testing.T, backend string, opts ...sinktest.Option) (*bundle, string) {
	t.Helper()
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	b := setup(t, backend, append([]sinktest.Option{sinktest.WithOmissionRevives(true), sinktest.WithClock(clock)}, opts...)...)
	offset.Store(int64(-41 * 24 * time.Hour))
	emails := make([]string, 100)
	for i := range emails {
		emails[i] = fmt.Sprintf("person%d@example.com", i+1)
	}
	b.subscribe(t, emails...)
	offset.Store(int64(-40 * 24 * time.Hour))
	for i := 1; i <= 70; i++ {
		status := "unsubscribed"
		if i > 50 {
			status = "bounce"
		}
		require.NoError(t, b.emu.SetStatus(fmt.Sprintf("person%d@example.com", i), b.listID, status))
	}
	offset.Store(0)
	return b, contacts(t, t.TempDir(), 110, nil)
}

// requireNoneRevived checks that person1..70 keep the status they left with.
func requireNoneRevived(t *testing.T, b *bundle) {
	t.Helper()
	for i := 1; i <= 70; i++ {
		email := fmt.Sprintf("person%d@example.com", i)
		s, ok := b.emu.SubscriberByEmail(email)
		require.True(t, ok, email)
		want := "unsubscribed"
		if i > 50 {
			want = "bounce"
		}
		require.Equal(t, want, s.Lists[b.listID].Status, "%s was made active", email)
	}
}

// TestFirstImportLearnsTheListsSuppressions: against a service that revives people on a push
// without a status, a first import into a list where 50 people unsubscribed and 20 bounced
// long ago (not in the feed) reads them from the list before it sends anything, makes none of
// them active, and counts them as suppressed; a dry run before it says so too, recording
// nothing. A second import does not read the list again; the reconciliation does.
func TestFirstImportLearnsTheListsSuppressions(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b, file := longAgoLeavers(t, backend)
		rt := b.open(t)

		plan, err := rt.PlanImport(ctx, jobs.ImportArgs{Path: file, ListID: b.listID}, nil)
		require.NoError(t, err)
		require.Equal(t, int64(70), plan.Counts.Suppressed, "the dry run reads the list too")
		require.Equal(t, int64(40), plan.Counts.Sent)
		require.Zero(t, suppressedTotal(t, rt), "a dry run records nothing")

		// The feed does not show them.
		id, err := rt.EnqueueStatusPull(ctx)
		pull := waitRun(t, rt, id, err)
		require.Zero(t, pull.Counts.Read)

		b.emu.ResetRequests()
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: file, ListID: b.listID})
		run := waitRun(t, rt, id, err)
		require.Equal(t, state.RunCompleted, run.State, run.Error)
		require.Equal(t, int64(70), run.Counts.Suppressed)
		require.Equal(t, int64(40), run.Counts.Sent)
		requireNoneRevived(t, b)
		for i := 71; i <= 110; i++ {
			s, _ := b.emu.SubscriberByEmail(fmt.Sprintf("person%d@example.com", i))
			require.Equal(t, "active", s.Lists[b.listID].Status)
		}
		// The list was read before the first bulkinsert.
		var order []string
		for _, r := range b.emu.Requests() {
			if strings.HasSuffix(r.Path, "/by_list") || strings.HasSuffix(r.Path, "/bulkinsert") {
				order = append(order, r.Path[strings.LastIndexByte(r.Path, '/')+1:]+" "+r.Query.Get("status"))
			}
		}
		require.GreaterOrEqual(t, len(order), 3)
		require.Equal(t, []string{"by_list unsubscribed", "by_list bounce"}, order[:2])
		sup, err := rt.State().Suppressed(ctx, b.listID, []string{"person1@example.com", "person70@example.com"})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"person1@example.com": "unsubscribed", "person70@example.com": "bounce"}, sup)

		b.emu.ResetRequests()
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: file, ListID: b.listID})
		again := waitRun(t, rt, id, err)
		require.Equal(t, int64(70), again.Counts.Suppressed)
		for _, r := range b.emu.Requests() {
			require.NotContains(t, r.Path, "/by_list", "a learnt list is not read again before a push")
		}
		requireNoneRevived(t, b)

		// The reconciliation reads learnt lists (no sync names this one) on its schedule.
		require.NoError(t, b.emu.SetStatus("person80@example.com", b.listID, "bounce"))
		id, err = rt.EnqueueReconcile(ctx)
		rec := waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 71, Duplicates: 70, Requests: 2}, rec.Counts, "the first reads everything: one new bounce")
	})
}

// TestFirstPushFailsWhenTheListCannotBeRead: when the list's unsubscribed and bounced people
// cannot be read (by_list refused), the first import fails and says why, and sends nothing.
func TestFirstPushFailsWhenTheListCannotBeRead(t *testing.T) {
	t.Parallel()
	b, file := longAgoLeavers(t, "sqlite")
	// The same service, but by_list is forbidden to this account.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/by_list") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"status":"403 Forbidden"}`))
			return
		}
		b.emu.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	b.cfg.Sink.BaseURL = proxy.URL + sinktest.V2Prefix
	b.cfg.Sink.HTTPClient = proxy.Client()
	b.emu.ResetRequests()
	rt := b.open(t)
	id, err := rt.EnqueueImport(context.Background(), jobs.ImportArgs{Path: file, ListID: b.listID})
	require.NoError(t, err)
	run, err := rt.Wait(context.Background(), id, nil)
	require.ErrorIs(t, err, jobs.ErrRunFailed)
	require.Equal(t, 1, run.Attempts, "a 403 is permanent")
	require.Contains(t, run.Error, "learn who unsubscribed or bounced in list")
	require.Contains(t, run.Error, "subsync does not push into a list it has not read")
	require.Contains(t, run.Error, "403")
	rows, _ := bulkRows(b.emu)
	require.Zero(t, rows, "nothing pushed blind")
	requireNoneRevived(t, b)
}

// TestReconcileBelievesTheRow: against a service whose by_list ignores its status filter, a
// reconciliation records each row's own status: the 5 who unsubscribed and the 2 who
// bounced, nobody active, and its run says how many rows it left out. Without the rows'
// statuses, the same service fails the reconciliation instead of guessing.
func TestReconcileBelievesTheRow(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend, sinktest.WithByListIgnoresStatus(true))
		emails := make([]string, 20)
		for i := range emails {
			emails[i] = contactEmail(i + 1)
		}
		b.subscribe(t, emails...)
		for i := 0; i < 7; i++ {
			require.NoError(t, b.emu.SetStatus(emails[i], b.listID, []string{"unsubscribed", "bounce"}[i/5]))
		}
		path := filepath.Join(t.TempDir(), "status-changes.csv")
		b.cfg.StatusPull.WriteBack = jobs.WriteBackSpec{Kind: jobs.WriteBackCSV, Path: path}
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "n", ListID: b.listID, Source: sources.Config{Path: "unused.csv"}}}
		rt := b.open(t)
		id, err := rt.EnqueueReconcile(ctx)
		rec := waitRun(t, rt, id, err)
		require.Equal(t, state.RunCompleted, rec.State)
		require.Equal(t, state.Counts{Read: 7, Requests: 2}, rec.Counts)
		require.Contains(t, rec.Error, fmt.Sprintf("list %d: 33 rows of /subscribers/by_list had another status", b.listID),
			"15 rows answered for unsubscribed (13 active, 2 bounced) and 18 for bounce (13 active, 5 unsubscribed)")
		require.Equal(t, int64(7), suppressedTotal(t, rt))
		sup, err := rt.State().Suppressed(ctx, b.listID, emails)
		require.NoError(t, err)
		require.Len(t, sup, 7)
		require.Equal(t, "unsubscribed", sup[emails[0]])
		require.Equal(t, "bounce", sup[emails[6]])

		id, err = rt.EnqueueStatusPull(ctx)
		pull := waitRun(t, rt, id, err)
		require.Equal(t, int64(7), pull.Counts.Sent, "only the 7 are written back")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotContains(t, string(data), emails[7], "an active person is never written back as unsubscribed")
	})
}

// TestReconcileWithoutRowStatuses: a service whose by_list ignores the status filter and
// shows no status of its own fails the reconciliation, saying so, and records nothing.
func TestReconcileWithoutRowStatuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "sqlite", sinktest.WithByListIgnoresStatus(true))
	b.subscribe(t, contactEmail(1), contactEmail(2))
	require.NoError(t, b.emu.SetStatus(contactEmail(1), b.listID, "unsubscribed"))
	statusField := regexp.MustCompile(`,"(email|phone)_status":"[a-z]*"`)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		b.emu.ServeHTTP(rec, r)
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(statusField.ReplaceAll(rec.Body.Bytes(), nil))
	}))
	t.Cleanup(proxy.Close)
	b.cfg.Sink.BaseURL, b.cfg.Sink.HTTPClient = proxy.URL+sinktest.V2Prefix, proxy.Client()
	b.cfg.Syncs = []jobs.SyncSpec{{Name: "n", ListID: b.listID, Source: sources.Config{Path: "unused.csv"}}}
	rt := b.open(t)
	id, err := rt.EnqueueReconcile(ctx)
	require.NoError(t, err)
	run, err := rt.Wait(ctx, id, nil)
	require.ErrorIs(t, err, jobs.ErrRunFailed)
	require.Equal(t, 1, run.Attempts)
	require.Contains(t, run.Error, "the service ignores the status filter, and subsync cannot tell who unsubscribed or bounced")
	require.Zero(t, suppressedTotal(t, rt))
}
