package jobs_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// crmSource is a Postgres "CRM" database with a contacts table: the source of imports and
// syncs, and the target of SQL write-backs.
type crmSource struct {
	url  string
	pool *pgxpool.Pool
}

// newCRM creates the contacts table in a fresh schema with n contacts
// (contact<i>@example.com), all active.
func newCRM(t *testing.T, n int) *crmSource {
	t.Helper()
	ctx := context.Background()
	u, _ := testdb.PostgresSchema(t)
	pool, err := pgxpool.New(ctx, u)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `CREATE TABLE contacts (
    email             TEXT PRIMARY KEY,
    firstname         TEXT NOT NULL,
    lastname          TEXT NOT NULL,
    status            TEXT NOT NULL DEFAULT 'active',
    newsletter_status TEXT NOT NULL DEFAULT '',
    status_changed_at TIMESTAMPTZ,
    subscriber_id     BIGINT NOT NULL DEFAULT 0,
    writebacks        INTEGER NOT NULL DEFAULT 0
)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO contacts (email, firstname, lastname)
SELECT 'contact' || i || '@example.com', 'Ola' || i, 'Nordmann' FROM generate_series(1, $1) AS i`, n)
	require.NoError(t, err)
	return &crmSource{url: u, pool: pool}
}

// writeBackStatement records the change; writebacks counts how often a change landed.
const writeBackStatement = `UPDATE contacts SET newsletter_status = :status, status_changed_at = :changed_at,
    subscriber_id = :subscriber_id, writebacks = writebacks + 1
WHERE email = :email -- the e-mail arrives lower-cased`

func (c *crmSource) writeBack() jobs.WriteBackSpec {
	return jobs.WriteBackSpec{Kind: jobs.WriteBackSQL, Driver: "pgx", DSN: c.url, Statement: writeBackStatement}
}

// statuses returns newsletter_status → how many contacts, and the total of writebacks.
func (c *crmSource) statuses(t *testing.T) (map[string]int, int) {
	t.Helper()
	rows, err := c.pool.Query(context.Background(),
		"SELECT newsletter_status, COUNT(*), SUM(writebacks) FROM contacts GROUP BY newsletter_status")
	require.NoError(t, err)
	defer rows.Close()
	out, total := map[string]int{}, 0
	for rows.Next() {
		var st string
		var n, wb int
		require.NoError(t, rows.Scan(&st, &n, &wb))
		out[st], total = n, total+wb
	}
	require.NoError(t, rows.Err())
	return out, total
}

func contactEmail(i int) string { return fmt.Sprintf("contact%d@example.com", i) }

func waitRun(t *testing.T, rt *jobs.Runtime, id int64, err error) state.Run {
	t.Helper()
	require.NoError(t, err)
	run, err := rt.Wait(context.Background(), id, nil)
	require.NoError(t, err)
	return run
}

// TestStatusLoopEndToEnd is the whole loop: import 1,000 contacts from a Postgres table; the
// service marks 50 unsubscribed and 20 bounced; a status pull writes those 70 back to the
// table; the next sync (the table still says they are active) leaves all 70 as they are in
// the service and reports them suppressed; a second pull writes nothing new. With the
// update-keep-status policy the 70 are sent through the status form, keeping their status.
func TestStatusLoopEndToEnd(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		// With WithActiveRevives, a push with status=active would make them active again:
		// only subsync's suppression keeps them out.
		b := setup(t, backend, sinktest.WithActiveRevives(true))
		crm := newCRM(t, 1000)
		b.cfg.Sources = map[string]sources.Config{"crm": {Kind: sources.KindSQL, Driver: "pgx", DSN: crm.url,
			Query: "SELECT email, firstname, lastname FROM contacts ORDER BY email"}}
		syncSource := sources.Config{Kind: sources.KindSQL, Driver: "pgx", DSN: crm.url,
			Query: "SELECT email, firstname, lastname, status FROM contacts ORDER BY email"}
		syncMapping := &mapping.Spec{Columns: map[string]mapping.Column{"email": {To: "email"},
			"firstname": {To: "firstname"}, "lastname": {To: "lastname"}, "status": {To: mapping.TargetStatus}}}
		b.cfg.Syncs = []jobs.SyncSpec{
			{Name: "crm", ListID: b.listID, Source: syncSource, Mapping: syncMapping},
			{Name: "crm-keep", ListID: b.listID, Source: syncSource, Mapping: syncMapping,
				Suppression: pipeline.SuppressionUpdateKeepStatus},
		}
		b.cfg.StatusPull.WriteBack = crm.writeBack()
		rt := b.open(t)

		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Source: "crm", ListID: b.listID})
		imp := waitRun(t, rt, id, err)
		require.Equal(t, int64(1000), imp.Counts.Sent)
		require.Len(t, b.emu.ListSubscribers(b.listID), 1000)

		for i := 1; i <= 70; i++ {
			status := "unsubscribed"
			if i > 50 {
				status = "bounce"
			}
			require.NoError(t, b.emu.SetStatus(contactEmail(i*10), b.listID, status))
		}

		id, err = rt.EnqueueStatusPull(ctx)
		pull := waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 70, Sent: 70, Requests: 1}, pull.Counts, "70 changes fetched, 70 written back")
		require.Empty(t, pull.Error)
		got, writes := crm.statuses(t)
		require.Equal(t, map[string]int{"": 930, "unsubscribed": 50, "bounce": 20}, got)
		require.Equal(t, 70, writes)
		var subID int64
		var changedAt time.Time
		require.NoError(t, crm.pool.QueryRow(ctx, "SELECT subscriber_id, status_changed_at FROM contacts WHERE email = $1",
			contactEmail(10)).Scan(&subID, &changedAt))
		stored, _ := b.emu.SubscriberByEmail(contactEmail(10))
		require.Equal(t, stored.ID, subID)
		require.WithinDuration(t, stored.Lists[b.listID].Updated, changedAt, time.Millisecond)

		// The table still says everybody is active; the sync sends status=active, but not
		// to the 70.
		b.emu.ResetRequests()
		id, err = rt.EnqueueSync(ctx, "crm", false)
		sync := waitRun(t, rt, id, err)
		require.Equal(t, int64(70), sync.Counts.Suppressed, "%+v", sync)
		require.Equal(t, int64(930), sync.Counts.Sent, "the mapping differs from the import's: the rest is sent again")
		requireMemberships(t, b, 50, 20)

		id, err = rt.EnqueueStatusPull(ctx)
		again := waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 70, Duplicates: 70, Requests: 1}, again.Counts, "a second pull writes nothing new")
		_, writes = crm.statuses(t)
		require.Equal(t, 70, writes)

		id, err = rt.EnqueueSync(ctx, "crm", false)
		sync = waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 1000, Suppressed: 70, Unchanged: 930}, sync.Counts)

		// update-keep-status: the 70 are sent with their suppressed status, one batch per status.
		b.emu.ResetRequests()
		id, err = rt.EnqueueSync(ctx, "crm-keep", false)
		keep := waitRun(t, rt, id, err)
		require.Equal(t, int64(70), keep.Counts.Suppressed)
		require.Equal(t, int64(70), keep.Counts.Sent)
		require.Equal(t, int64(930), keep.Counts.Unchanged)
		byStatus := map[string]int{}
		for _, r := range b.emu.Requests() {
			if strings.HasSuffix(r.Path, "/subscribers/bulkinsert") && r.Status == 200 {
				byStatus[r.Query.Get("status")] += r.Rows
			}
		}
		require.Equal(t, map[string]int{"unsubscribed": 50, "bounce": 20}, byStatus)
		requireMemberships(t, b, 50, 20)
	})
}

// requireMemberships checks that contacts 10, 20, … 500 are unsubscribed, 510 … 700 bounced,
// and everybody else active in the emulator.
func requireMemberships(t *testing.T, b *bundle, unsubscribed, bounced int) {
	t.Helper()
	counts := map[string]int{}
	for _, s := range b.emu.ListSubscribers(b.listID) {
		st := s.Lists[b.listID].Status
		counts[st]++
		var i int
		_, err := fmt.Sscanf(s.Email, "contact%d@example.com", &i)
		require.NoError(t, err)
		want := "active"
		switch {
		case i%10 == 0 && i <= 500:
			want = "unsubscribed"
		case i%10 == 0 && i <= 700:
			want = "bounce"
		}
		require.Equal(t, want, st, s.Email)
	}
	require.Equal(t, unsubscribed, counts["unsubscribed"])
	require.Equal(t, bounced, counts["bounce"])
}

// TestWriteBackRetriedAfterSourceDown: a write-back whose database is down fails without
// failing the pull (the suppression list is recorded), stays pending and visible, and lands
// once on the next pull, by a worker whose configuration reaches the database.
func TestWriteBackRetriedAfterSourceDown(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		crm := newCRM(t, 20)
		rows := make([]string, 0, 20)
		for i := 1; i <= 20; i++ {
			rows = append(rows, contactEmail(i))
		}
		b.subscribe(t, rows...)
		for i := 1; i <= 5; i++ {
			require.NoError(t, b.emu.SetStatus(contactEmail(i), b.listID, "unsubscribed"))
		}

		// Nothing listens on port 1: the source database is down.
		const password = "Crm-Passw0rd-NOT-FOR-LOGS"
		down := b.cfg
		down.StatusPull.WriteBack = crm.writeBack()
		down.StatusPull.WriteBack.DSN = "postgres://crm:" + password + "@127.0.0.1:1/crm?connect_timeout=2"
		rt, err := jobs.Open(ctx, down)
		require.NoError(t, err)
		id, err := rt.EnqueueStatusPull(ctx)
		pull := waitRun(t, rt, id, err)
		require.Equal(t, state.RunCompleted, pull.State, "the suppression list is recorded all the same")
		require.Equal(t, state.Counts{Read: 5, Requests: 1}, pull.Counts)
		require.Contains(t, pull.Error, "write-back")
		require.Contains(t, pull.Error, "retried on the next pull")
		require.NotContains(t, pull.Error, password)
		sup, err := rt.State().Suppressed(ctx, b.listID, []string{contactEmail(1)})
		require.NoError(t, err)
		require.Equal(t, map[string]string{contactEmail(1): "unsubscribed"}, sup)
		st, err := rt.StatusOverview(ctx)
		require.NoError(t, err)
		require.Len(t, st.WriteBacks, 1)
		require.Equal(t, int64(5), st.WriteBacks[0].Pending)
		require.Equal(t, int64(5), st.WriteBacks[0].Failing)
		require.NotEmpty(t, st.WriteBacks[0].LastError)
		require.NotContains(t, st.WriteBacks[0].LastError, password)
		require.NotContains(t, stateText(t, rt.State().DB()), password)
		require.Len(t, st.Pending, 5)
		rt.Close()
		_, writes := crm.statuses(t)
		require.Zero(t, writes)

		// The next pull, by a worker that reaches the database, writes them back once.
		up := b.cfg
		up.StatusPull.WriteBack = crm.writeBack()
		rt = b.openWith(t, up)
		id, err = rt.EnqueueStatusPull(ctx)
		pull = waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 5, Duplicates: 5, Sent: 5, Requests: 1}, pull.Counts)
		require.Empty(t, pull.Error)
		got, writes := crm.statuses(t)
		require.Equal(t, map[string]int{"": 15, "unsubscribed": 5}, got)
		require.Equal(t, 5, writes)
		st, err = rt.StatusOverview(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(0), st.WriteBacks[0].Pending)
		require.Equal(t, int64(5), st.WriteBacks[0].Done)
		require.Empty(t, st.Pending)

		id, err = rt.EnqueueStatusPull(ctx)
		pull = waitRun(t, rt, id, err)
		require.Zero(t, pull.Counts.Sent)
		_, writes = crm.statuses(t)
		require.Equal(t, 5, writes, "landed once")
		require.NotContains(t, b.logs.String(), password)
	})
}

// TestWriteBackCSVAndReconcile: changes are appended to a CSV file once; reconciliation
// finds an unsubscribe older than the status feed's window.
func TestWriteBackCSVAndReconcile(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		var offset atomic.Int64 // the emulator's clock, relative to now
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		b := setup(t, backend, sinktest.WithClock(clock))
		b.subscribe(t, "a@example.com", "b@example.com", "c@example.com")
		// An unsubscribe from 40 days ago: outside the feed's default 30-day window.
		offset.Store(int64(-40 * 24 * time.Hour))
		require.NoError(t, b.emu.SetStatus("a@example.com", b.listID, "unsubscribed"))
		offset.Store(0)
		require.NoError(t, b.emu.SetStatus("b@example.com", b.listID, "bounce"))

		path := filepath.Join(t.TempDir(), "out", "status-changes.csv")
		b.cfg.StatusPull.WriteBack = jobs.WriteBackSpec{Kind: jobs.WriteBackCSV, Path: path}
		b.cfg.StatusPull.Reconcile = true
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "n", ListID: b.listID, Source: sources.Config{Path: "unused.csv"}}}
		rt := b.open(t)
		for range 2 {
			id, err := rt.EnqueueStatusPull(ctx)
			waitRun(t, rt, id, err)
		}
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		recs, err := csv.NewReader(f).ReadAll()
		require.NoError(t, err)
		require.Len(t, recs, 3, "a header and two changes, once: %v", recs)
		require.Equal(t, []string{"changed_at", "email", "status", "status_mobile", "list_id", "subscriber_id", "id"}, recs[0])
		require.Equal(t, "a@example.com", recs[1][1], "oldest first")
		require.Equal(t, "unsubscribed", recs[1][2])
		require.Equal(t, "b@example.com", recs[2][1])
		require.Equal(t, "bounce", recs[2][2])
		require.Equal(t, fmt.Sprint(b.listID), recs[2][4])
		sup, err := rt.State().Suppressed(ctx, b.listID, []string{"a@example.com", "b@example.com", "c@example.com"})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"a@example.com": "unsubscribed", "b@example.com": "bounce"}, sup)
	})
}

// TestImportIntoMissingList: a list that does not exist fails the run at once, permanently,
// before any row is sent.
func TestImportIntoMissingList(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		rt := b.open(t)
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: contacts(t, t.TempDir(), 10, nil), ListID: 4242})
		require.NoError(t, err)
		run, err := rt.Wait(ctx, id, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Equal(t, state.RunFailed, run.State)
		require.Equal(t, "list 4242 does not exist", run.Error)
		require.Equal(t, 1, run.Attempts)
		rows, requests := bulkRows(b.emu)
		require.Zero(t, rows+requests)

		_, err = rt.PlanImport(ctx, jobs.ImportArgs{Path: contacts(t, t.TempDir(), 10, nil), ListID: 4242}, nil)
		require.ErrorContains(t, err, "list 4242 does not exist")
	})
}
