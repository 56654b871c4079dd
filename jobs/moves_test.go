package jobs_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// keyedContacts writes a CSV of n contacts keyed K<i> (Kundenr,E-post,Fornavn), whose
// address is email(i), followed by the extra lines; it returns the path.
func keyedContacts(t *testing.T, path string, n int, email func(i int) string, extra ...string) string {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "Kundenr,E-post,Fornavn")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "K%d,%s,Ola%d\n", i, email(i), i)
	}
	for _, l := range extra {
		fmt.Fprintln(w, l)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return path
}

// TestKeyedAddressChange is issue 17's second test: the e-mail of 100 keyed contacts changes,
// 10 of whom had unsubscribed. The next sync (which removes people) sends the 90 new addresses active and the 10
// unsubscribed, unsubscribes the 100 old addresses, and activates nobody. A key on two rows
// with different addresses, or an address on two rows with different keys, is a reject.
func TestKeyedAddressChange(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		const n = 1000
		b := setup(t, backend)
		path := filepath.Join(t.TempDir(), "crm.csv")
		old := func(i int) string { return fmt.Sprintf("person%d@example.com", i) }
		keyedContacts(t, path, n, old)
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path},
			Removed: jobs.RemovedUnsubscribe,
			Mapping: &mapping.Spec{Columns: map[string]mapping.Column{
				"Kundenr": {To: "external_id"}, "E-post": {To: "email"}, "Fornavn": {To: "firstname"}}}}}
		rt := b.open(t)
		syncNow := func() state.Run {
			t.Helper()
			run, err := syncAfterQueueEmpties(t, rt, jobs.SyncArgs{Name: "crm"})
			require.NoError(t, err)
			return run
		}

		first := syncNow()
		require.Equal(t, int64(n), first.Counts.Sent)
		s, ok := b.emu.SubscriberByEmail(old(7))
		require.True(t, ok)
		require.Equal(t, "K7", s.Fields["external_id"], "the key is sent as external_id")

		// 10 of the 100 who will move unsubscribe in the service; a status pull learns it.
		for i := 1; i <= 10; i++ {
			require.NoError(t, b.emu.SetStatus(old(i*10), b.listID, "unsubscribed"))
		}
		pull, err := rt.EnqueueStatusPull(ctx)
		waitRun(t, rt, pull, err)

		// Keys 1..100 come with new addresses; two more rows claim a key and an address that
		// earlier rows hold.
		moved := func(i int) string {
			if i <= 100 {
				return fmt.Sprintf("new%d@example.com", i)
			}
			return old(i)
		}
		keyedContacts(t, path, n, moved, "K500,someone-else@example.com,Kari", "K2000,person600@example.com,Kari")
		before := snapshot(b.emu)
		var planned []string
		plan, err := rt.PlanSync(ctx, "crm", false, func(r jobs.PlanRow) error {
			if r.Action == jobs.PlanRemove {
				planned = append(planned, r.Email)
			}
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, int64(90), plan.Counts.Removed, "the dry run lists the old addresses not yet unsubscribed")
		require.Len(t, planned, 90)
		for _, e := range planned {
			var i int
			_, err := fmt.Sscanf(e, "person%d@example.com", &i)
			require.NoError(t, err, e)
			require.True(t, i <= 100 && i%10 != 0, e)
		}
		second := syncNow()
		require.Equal(t, int64(100), second.Counts.Sent, "the 100 new addresses")
		require.Equal(t, int64(90), second.Counts.Removed, "the old addresses not yet unsubscribed")
		require.Equal(t, int64(10), second.Counts.Suppressed, "10 new addresses keep the old one's status")
		require.Equal(t, int64(2), second.Counts.Rejected)
		codes := map[int]string{}
		require.NoError(t, rt.State().Rejects(ctx, second.ID, func(r state.Reject) error {
			codes[r.Line] = r.Code
			return nil
		}))
		require.Equal(t, map[int]string{n + 2: mapping.CodeDuplicateKey, n + 3: mapping.CodeKeyConflict}, codes)
		// The run names whom it unsubscribed: each old address, moved, with its key's new one.
		removed, err := rt.State().RemovedPage(ctx, second.ID, 0, 1000)
		require.NoError(t, err)
		require.Len(t, removed, 90)
		for _, r := range removed {
			var i int
			_, err := fmt.Sscanf(r.Email, "person%d@example.com", &i)
			require.NoError(t, err, r.Email)
			require.True(t, r.Moved, r.Email)
			require.Equal(t, moved(i), r.NewEmail, r.Email)
		}
		counted, err := rt.State().CountRemoved(ctx, second.ID)
		require.NoError(t, err)
		require.Equal(t, state.RemovalCounts{Moved: 90}, counted)

		after := snapshot(b.emu)
		active, unsubscribed := 0, 0
		for i := 1; i <= 100; i++ {
			st := after[moved(i)].Lists[b.listID].Status
			switch st {
			case "active":
				active++
				require.NotZero(t, i%10, "%s had unsubscribed under the old address", moved(i))
			case "unsubscribed":
				unsubscribed++
				require.Zero(t, i%10, moved(i))
			}
			require.Equal(t, fmt.Sprintf("K%d", i), after[moved(i)].Fields["external_id"])
			require.Equal(t, "unsubscribed", after[old(i)].Lists[b.listID].Status, old(i))
		}
		require.Equal(t, 90, active)
		require.Equal(t, 10, unsubscribed)
		for email, s := range after {
			if prev, ok := before[email]; ok && prev.Lists[b.listID].Status != "active" {
				require.Equal(t, prev.Lists[b.listID].Status, s.Lists[b.listID].Status, "nobody activated: %s", email)
			}
		}
		_, ok = after["someone-else@example.com"]
		require.False(t, ok, "a rejected row is not sent")
		for i := 101; i <= n; i++ {
			require.Equal(t, before[old(i)], after[old(i)], "nobody else changes")
		}

		// The next sync changes nothing, and still activates nobody.
		b.emu.ResetRequests()
		third := syncNow()
		require.Zero(t, third.Counts.Sent)
		require.Zero(t, third.Counts.Removed)
		rows, requests := bulkRows(b.emu)
		require.Zero(t, rows+requests)
		require.Equal(t, after, snapshot(b.emu))
	})
}

// TestMovesUnderTheGuard: every key of 1000 comes with a new address. The old addresses are
// removals like any other: with removed = "keep" nobody is unsubscribed (the old addresses stay
// as they are), and with removed = "unsubscribe" the guard (max_removals = "10%") stops the run
// before anyone is, until --allow-removals.
func TestMovesUnderTheGuard(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		for _, removed := range []string{jobs.RemovedKeep, jobs.RemovedUnsubscribe} {
			t.Run(removed, func(t *testing.T) {
				ctx := context.Background()
				const n = 1000
				b := setup(t, backend)
				path := filepath.Join(t.TempDir(), "crm.csv")
				old := func(i int) string { return fmt.Sprintf("person%d@example.com", i) }
				moved := func(i int) string { return fmt.Sprintf("new%d@example.com", i) }
				keyedContacts(t, path, n, old)
				b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path},
					Removed: removed, MaxRemovals: "10%",
					Mapping: &mapping.Spec{Columns: map[string]mapping.Column{
						"Kundenr": {To: "external_id"}, "E-post": {To: "email"}, "Fornavn": {To: "firstname"}}}}}
				rt := b.open(t)
				first, err := syncAfterQueueEmpties(t, rt, jobs.SyncArgs{Name: "crm"})
				require.NoError(t, err)
				require.Equal(t, int64(n), first.Counts.Sent)

				keyedContacts(t, path, n, moved)
				plan, err := rt.PlanSync(ctx, "crm", false, nil)
				require.NoError(t, err)
				require.Zero(t, plan.Counts.Removed, "the dry run unsubscribes nobody")
				second, err := syncAfterQueueEmpties(t, rt, jobs.SyncArgs{Name: "crm"})
				if removed == jobs.RemovedKeep {
					require.NoError(t, err)
					require.Empty(t, plan.RemovalsStopped)
				} else {
					require.ErrorIs(t, err, jobs.ErrRunFailed)
					require.Contains(t, plan.RemovalsStopped, "removals stopped: 1000 people would be unsubscribed")
					require.Contains(t, second.Error, "removals stopped: 1000 people would be unsubscribed (0 who left the source, "+
						"1000 old addresses of changed keys), more than max_removals = \"10%\" allows (100 of the sync's 1000 members)")
				}
				require.Equal(t, int64(n), second.Counts.Sent, "the new addresses are sent")
				require.Zero(t, second.Counts.Removed)
				require.Zero(t, unsubscribedRows(b.emu), "nobody unsubscribed")
				for i := 1; i <= n; i++ {
					s, ok := b.emu.SubscriberByEmail(old(i))
					require.True(t, ok)
					require.Equal(t, "active", s.Lists[b.listID].Status, old(i))
				}
				if removed == jobs.RemovedKeep {
					return
				}
				allowed, err := syncAfterQueueEmpties(t, rt, jobs.SyncArgs{Name: "crm", AllowRemovals: true})
				require.NoError(t, err)
				require.Equal(t, int64(n), allowed.Counts.Removed, "--allow-removals lets the moves through")
				for i := 1; i <= n; i++ {
					s, ok := b.emu.SubscriberByEmail(old(i))
					require.True(t, ok)
					require.Equal(t, "unsubscribed", s.Lists[b.listID].Status, old(i))
				}
			})
		}
	})
}
