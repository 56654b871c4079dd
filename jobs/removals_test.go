package jobs_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// snapshot is every subscriber of the emulator by e-mail.
func snapshot(emu *sinktest.Server) map[string]sinktest.Stored {
	out := map[string]sinktest.Stored{}
	for _, s := range emu.Subscribers() {
		out[s.Email] = s
	}
	return out
}

// unsubscribedRows counts the rows of the acknowledged bulkinsert requests with
// status=unsubscribed.
func unsubscribedRows(emu *sinktest.Server) int {
	n := 0
	for _, r := range emu.Requests() {
		if r.Path == sinktest.V2Prefix+"/subscribers/bulkinsert" && r.Status == 200 && r.Query.Get("status") == sink.StatusUnsubscribed {
			n += r.Rows
		}
	}
	return n
}

// dropLines rewrites the CSV at path without the data lines (1-based) for which drop holds;
// it returns the e-mails dropped.
func dropLines(t *testing.T, path string, drop func(i int) bool) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out bytes.Buffer
	dropped := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for i := 0; sc.Scan(); i++ {
		if i > 0 && drop(i) {
			email, _, _ := strings.Cut(sc.Text(), ",")
			dropped[email] = true
			continue
		}
		out.WriteString(sc.Text() + "\n")
	}
	require.NoError(t, sc.Err())
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o600))
	return dropped
}

// TestRemovals is issue 17's first test: 10,000 contacts synced, 300 deleted from the source,
// the next sync with removed = "unsubscribe" unsubscribes exactly those 300 and changes
// nobody else. A source cut to half its size, or a read that fails, removes nobody and says
// why; above the guard nobody is removed until --allow-removals.
func TestRemovals(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		const n = 10_000
		b := setup(t, backend)
		path := contacts(t, t.TempDir(), n, nil)
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path},
			Removed: jobs.RemovedUnsubscribe}}
		rt := b.open(t)
		syncNow := func(args jobs.SyncArgs) (state.Run, error) {
			t.Helper()
			return syncAfterQueueEmpties(t, rt, args)
		}

		first, err := syncNow(jobs.SyncArgs{Name: "crm"})
		require.NoError(t, err)
		require.Equal(t, int64(n), first.Counts.Sent)
		require.Zero(t, first.Counts.Removed)

		// 300 contacts are deleted in the source.
		gone := dropLines(t, path, func(i int) bool { return i%25 == 3 && i <= 7500 })
		require.Len(t, gone, 300)
		before := snapshot(b.emu)
		b.emu.ResetRequests()

		// The dry run lists exactly them.
		var planned []jobs.PlanRow
		plan, err := rt.PlanSync(ctx, "crm", false, func(r jobs.PlanRow) error {
			if r.Action == jobs.PlanRemove {
				planned = append(planned, r)
			}
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, int64(300), plan.Counts.Removed)
		require.Empty(t, plan.RemovalsStopped)
		require.Len(t, planned, 300)
		for _, r := range planned {
			require.True(t, gone[r.Email], r.Email)
			require.Equal(t, sink.StatusUnsubscribed, r.Status)
		}

		second, err := syncNow(jobs.SyncArgs{Name: "crm"})
		require.NoError(t, err)
		require.Equal(t, state.Counts{Read: n - 300, Unchanged: n - 300, Removed: 300, Requests: 1}, second.Counts)
		require.Equal(t, 300, unsubscribedRows(b.emu))
		after := snapshot(b.emu)
		require.Len(t, after, n)
		for email, s := range after {
			if gone[email] {
				require.Equal(t, "unsubscribed", s.Lists[b.listID].Status, email)
				require.Equal(t, before[email].Fields, s.Fields, "an unsubscribe sends the address only")
				continue
			}
			require.Equal(t, before[email], s, "nobody else changes: %s", email)
		}

		// Nothing more to remove.
		b.emu.ResetRequests()
		third, err := syncNow(jobs.SyncArgs{Name: "crm"})
		require.NoError(t, err)
		require.Zero(t, third.Counts.Removed)
		rows, requests := bulkRows(b.emu)
		require.Zero(t, rows+requests)

		// The file loses its second half (at a line end: a file cut in a line is not read
		// whole, see TestRemovalsAfterACutFile): the guard (10% of the members) stops the
		// run before anyone is removed, and says how many would have gone.
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		half := bytes.LastIndexByte(data[:len(data)/2], '\n') + 1
		require.NoError(t, os.WriteFile(path, data[:half], 0o600))
		kept := 0
		for _, line := range strings.Split(string(data[:half]), "\n")[1:] {
			if strings.Count(line, ",") == 2 {
				kept++
			}
		}
		wouldGo := n - 300 - kept
		before = snapshot(b.emu)
		stopped, err := syncNow(jobs.SyncArgs{Name: "crm"})
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Equal(t, state.RunFailed, stopped.State)
		require.Contains(t, stopped.Error, fmt.Sprintf("removals stopped: %d people would be unsubscribed (%d who left the source, 0 old addresses", wouldGo, wouldGo))
		require.Contains(t, stopped.Error, "(970 of the sync's 9700 members)")
		require.Contains(t, stopped.Error, "--allow-removals")
		require.Zero(t, stopped.Counts.Removed)
		require.Equal(t, before, snapshot(b.emu), "nobody removed")

		// A read that fails removes nobody, and says so.
		require.NoError(t, os.Rename(path, path+".away"))
		failed, err := syncNow(jobs.SyncArgs{Name: "crm"})
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Contains(t, failed.Error, "nobody was removed")
		require.Equal(t, before, snapshot(b.emu), "nobody removed")
		require.NoError(t, os.Rename(path+".away", path))

		// The dry run says the guard would stop them, or, with --allow-removals, lists them.
		plan, err = rt.PlanSync(ctx, "crm", false, nil)
		require.NoError(t, err)
		require.Zero(t, plan.Counts.Removed)
		require.Contains(t, plan.RemovalsStopped, fmt.Sprintf("removals stopped: %d people", wouldGo))
		plan, err = rt.PlanSyncArgs(ctx, jobs.SyncArgs{Name: "crm", AllowRemovals: true}, nil)
		require.NoError(t, err)
		require.Equal(t, int64(wouldGo), plan.Counts.Removed)
		require.Empty(t, plan.RemovalsStopped)

		// --allow-removals lets one run through.
		allowed, err := syncNow(jobs.SyncArgs{Name: "crm", AllowRemovals: true})
		require.NoError(t, err)
		require.Equal(t, int64(wouldGo), allowed.Counts.Removed)
		unsubscribed := 0
		for _, s := range b.emu.ListSubscribers(b.listID) {
			if s.Lists[b.listID].Status == "unsubscribed" {
				unsubscribed++
			}
		}
		require.Equal(t, 300+wouldGo, unsubscribed)
		run, err := rt.State().Run(ctx, allowed.ID)
		require.NoError(t, err)
		require.Equal(t, int64(wouldGo), run.Counts.Removed, "runs ID counts removals")
	})
}

// TestRemovalsNeedAWholeRead: an incremental read (from the watermark of a SQL source) does
// not tell who left the source: it removes nobody and says so; a --full read of the same
// source removes those who left.
func TestRemovalsNeedAWholeRead(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		b := setup(t, backend)
		dsn, db := sqliteSource(t, `CREATE TABLE contacts (email TEXT, firstname TEXT, updated INTEGER);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
INSERT INTO contacts SELECT 'person' || i || '@example.com', 'Ola', 1 FROM n`)
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Removed: jobs.RemovedUnsubscribe,
			Source: sources.Config{Kind: sources.KindSQL, Driver: "sqlite", DSN: dsn,
				Query: "SELECT email, firstname, updated FROM contacts", WatermarkColumn: "updated"},
			Mapping: &mapping.Spec{Columns: map[string]mapping.Column{"email": {To: "email"}, "firstname": {To: "firstname"},
				"updated": {To: mapping.TargetIgnore}}}}}
		rt := b.open(t)
		syncNow := func(full bool) state.Run {
			t.Helper()
			run, err := syncAfterQueueEmpties(t, rt, jobs.SyncArgs{Name: "crm", Full: full})
			require.NoError(t, err)
			return run
		}
		require.Equal(t, int64(100), syncNow(false).Counts.Sent)

		_, err := db.Exec(`DELETE FROM contacts WHERE email IN ('person1@example.com', 'person2@example.com');
UPDATE contacts SET firstname = 'Kari', updated = 2 WHERE email = 'person3@example.com'`)
		require.NoError(t, err)
		incremental := syncNow(false)
		require.Equal(t, state.RunCompleted, incremental.State)
		require.Equal(t, int64(1), incremental.Counts.Read)
		require.Zero(t, incremental.Counts.Removed)
		require.Contains(t, incremental.Error, "an incremental read (from the watermark) does not tell who left the source: nobody was removed")
		require.Zero(t, unsubscribedRows(b.emu))

		full := syncNow(true)
		require.Equal(t, int64(98), full.Counts.Read)
		require.Equal(t, int64(2), full.Counts.Removed)
		for _, e := range []string{"person1@example.com", "person2@example.com"} {
			s, ok := b.emu.SubscriberByEmail(e)
			require.True(t, ok)
			require.Equal(t, "unsubscribed", s.Lists[b.listID].Status)
		}
	})
}

// TestRemovalsAfterACutFile: a file cut short while it was copied (at 95%, in the middle of a
// line) ends in a line that cannot be read. Such a read is not complete: the sync removes
// nobody, though the people past the cut are fewer than the guard allows, and says why.
func TestRemovalsAfterACutFile(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		const n = 1000
		b := setup(t, backend)
		path := contacts(t, t.TempDir(), n, nil)
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path},
			Removed: jobs.RemovedUnsubscribe, MaxRemovals: "10%"}}
		rt := b.open(t)
		first, err := syncAfterQueueEmpties(t, rt, jobs.SyncArgs{Name: "crm"})
		require.NoError(t, err)
		require.Equal(t, int64(n), first.Counts.Sent)

		data, err := os.ReadFile(path)
		require.NoError(t, err)
		cut := bytes.LastIndexByte(data[:len(data)*95/100], '\n') + 1 + len("person9") // in a line's e-mail
		require.NoError(t, os.WriteFile(path, data[:cut], 0o600))
		before := snapshot(b.emu)

		plan, err := rt.PlanSync(ctx, "crm", false, nil)
		require.NoError(t, err)
		require.Zero(t, plan.Counts.Removed)
		require.Contains(t, plan.RemovalsStopped, "the source ends in a line that could not be read")
		run, err := syncAfterQueueEmpties(t, rt, jobs.SyncArgs{Name: "crm"})
		require.NoError(t, err)
		require.Equal(t, int64(1), run.Counts.Rejected, "the broken line")
		require.Zero(t, run.Counts.Removed)
		require.Contains(t, run.Error, "the source ends in a line that could not be read")
		require.Contains(t, run.Error, "nobody was removed")
		require.Zero(t, unsubscribedRows(b.emu))
		require.Equal(t, before, snapshot(b.emu), "nobody removed")
	})
}
