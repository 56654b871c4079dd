package jobs_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestForget: after `forget`, the person is gone from the service and from every table of the
// database (found through the database's own catalogue, so a table added later is covered)
// but for the keyed hash; the erasure is written back to the source; a later sync and a
// re-import reject their row as erased; a status change the feed still lists for them is not
// recorded.
func TestForget(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		const gone = "Person7@Example.com" // as a person types it
		b := setup(t, backend)
		dir := t.TempDir()
		path := contacts(t, dir, 20, nil)
		wbPath := filepath.Join(dir, "writeback.csv")
		// removed = "unsubscribe": the sync keeps a roster of whom it delivered.
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path},
			Removed: jobs.RemovedUnsubscribe}}
		b.cfg.StatusPull.WriteBack = jobs.WriteBackSpec{Kind: jobs.WriteBackCSV, Path: wbPath}
		rt := b.open(t)
		st := rt.State()

		id, err := rt.EnqueueSync(ctx, "crm", false)
		require.Equal(t, int64(20), waitRun(t, rt, id, err).Counts.Sent)
		_, ok := b.emu.SubscriberByEmail(gone)
		require.True(t, ok)

		// The person's data in every other table: a reject holding the address (a duplicate
		// row), a warning (an invalid phone dropped), a status change with its suppression and
		// a pending write-back, a staged file.
		dup := filepath.Join(dir, "dup.csv")
		require.NoError(t, os.WriteFile(dup, []byte("E-post,Fornavn,Mobil\nperson7@example.com,Ola,12\nperson7@example.com,Ola,12\n"), 0o600))
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: dup, ListID: b.listID, Shared: true,
			Mapping: &mapping.Spec{Duplicates: mapping.DuplicatesReject, OnInvalid: mapping.OnInvalidDrop}})
		require.Equal(t, int64(1), waitRun(t, rt, id, err).Counts.Rejected)
		_, err = st.RecordStatusChanges(ctx, []state.StatusChange{{Email: "person7@example.com", Status: sink.StatusUnsubscribed,
			ListID: b.listID, ChangedAt: time.Now()}}, []string{jobs.WriteBackCSV})
		require.NoError(t, err)
		_, err = st.StageFile(ctx, "queued.csv", strings.NewReader("email\nperson1@example.com\nPERSON7@example.com\n"))
		require.NoError(t, err)
		kept, err := st.StageFile(ctx, "other.csv", strings.NewReader("email\nperson1@example.com\n"))
		require.NoError(t, err)
		require.NotEmpty(t, scanFor(t, st.DB(), st.Dialect(), gone), "the scan finds the person before the erasure")

		// A dry run changes nothing and says what would go.
		plans, err := rt.PlanForget(ctx, []string{gone})
		require.NoError(t, err)
		require.Len(t, plans, 1)
		require.NotZero(t, plans[0].SubscriberID)
		require.Equal(t, state.Erased{"subsync_suppression": 1, "subsync_status_change": 1, "subsync_writeback": 1,
			"subsync_reject": 1, "subsync_warning": 1, "subsync_roster": 1, "subsync_fingerprint": 1, "subsync_staged_file": 1},
			plans[0].Held)
		_, ok = b.emu.SubscriberByEmail(gone)
		require.True(t, ok, "a dry run deletes nothing")

		id, hashes, err := rt.RequestForget(ctx, []string{gone})
		run := waitRun(t, rt, id, err)
		require.Equal(t, state.RunCompleted, run.State)
		require.Equal(t, int64(1), run.Counts.Read)
		require.Equal(t, int64(1), run.Counts.Sent, "deleted in the service")
		require.Contains(t, run.Error, "erased 1 person: 1 deleted in the service")
		require.NotContains(t, strings.ToLower(run.Error), "person7")
		pending, err := rt.ErasurePending(ctx, hashes)
		require.NoError(t, err)
		require.Zero(t, pending)

		_, ok = b.emu.SubscriberByEmail(gone)
		require.False(t, ok, "gone from the service")
		require.Len(t, b.emu.ListSubscribers(b.listID), 19, "nobody else")
		require.Empty(t, scanFor(t, st.DB(), st.Dialect(), gone), "gone from every table")
		var erased int
		require.NoError(t, st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_erased").Scan(&erased))
		require.Equal(t, 1, erased, "only the keyed hash stays")
		_, err = st.StagedFileInfo(ctx, kept.ID)
		require.NoError(t, err, "a staged file without the address stays")
		wb, err := os.ReadFile(wbPath)
		require.NoError(t, err)
		require.Contains(t, string(wb), ",person7@example.com,erased,", "the erasure is written back to the source")
		require.NotContains(t, b.logs.String(), "person7", "no log line names the person")

		// The feed still lists an old change of the person: it is not recorded.
		_, err = st.RecordStatusChanges(ctx, []state.StatusChange{{Email: gone, Status: sink.StatusBounce,
			ListID: b.listID, ChangedAt: time.Now()}}, []string{jobs.WriteBackCSV})
		require.NoError(t, err)
		// The next sync and a re-import reject the row as erased, and keep no address.
		id, err = rt.EnqueueSync(ctx, "crm", false)
		run = waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 20, Unchanged: 19, Rejected: 1}, run.Counts)
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID, Shared: true})
		run = waitRun(t, rt, id, err)
		require.Equal(t, int64(1), run.Counts.Rejected)
		var rejects []state.Reject
		require.NoError(t, st.Rejects(ctx, run.ID, func(r state.Reject) error { rejects = append(rejects, r); return nil }))
		require.Len(t, rejects, 1)
		require.Equal(t, mapping.CodeErased, rejects[0].Code)
		require.Equal(t, 8, rejects[0].Line)
		_, ok = b.emu.SubscriberByEmail(gone)
		require.False(t, ok, "not re-added")
		require.Empty(t, scanFor(t, st.DB(), st.Dialect(), gone), "still gone from every table")

		// Forgetting again is harmless: nothing is left to remove.
		id, _, err = rt.RequestForget(ctx, []string{gone})
		run = waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 1}, run.Counts)
	})
}

// scanFor lists every place in the database (every table of its catalogue, every column)
// that holds the address (any case), its unkeyed fingerprint hash (an integer, or 8 bytes of
// a blob), or a gzip stream (a staged file) that holds the address.
func scanFor(t *testing.T, db *sql.DB, d state.Dialect, email string) []string {
	t.Helper()
	ctx := context.Background()
	needle := strings.ToLower(strings.TrimSpace(email))
	h := state.EmailHash(needle)
	var hb [8]byte
	binary.LittleEndian.PutUint64(hb[:], h)
	q := "SELECT name FROM sqlite_master WHERE type = 'table'"
	if d == state.Postgres {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
	}
	rows, err := db.QueryContext(ctx, q)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Contains(t, tables, "subsync_erased")
	require.Contains(t, tables, "river_job")

	var found []string
	holds := func(b []byte) bool {
		if bytes.Contains(bytes.ToLower(b), []byte(needle)) || bytes.Contains(b, hb[:]) {
			return true
		}
		if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
			if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
				plain, _ := io.ReadAll(zr) // a chunk of a longer stream ends early: what it holds is enough
				return bytes.Contains(bytes.ToLower(plain), []byte(needle))
			}
		}
		return false
	}
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			require.NoError(t, rows.Scan(ptrs...))
			for i, v := range vals {
				var hit bool
				switch v := v.(type) {
				case nil:
				case []byte:
					hit = holds(v)
				case string:
					hit = holds([]byte(v))
				case int64:
					hit = v == int64(h)
				default:
					hit = holds([]byte(fmt.Sprint(v)))
				}
				if hit {
					found = append(found, table+"."+cols[i])
				}
			}
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return found
}

// TestForgetWaitsForRunningSync: a sync that has the person in every batch is running when
// the erasure begins; a batch it had in flight then (filtered before the erasure) must not
// bring the person back, into the service or into the fingerprints: the erasure waits for the
// sync to end before it deletes.
func TestForgetWaitsForRunningSync(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		const gone = "gone@example.com"
		b := setup(t, backend)
		var csv strings.Builder
		csv.WriteString("E-post,Fornavn\n")
		for i := 1; i <= 5000; i++ {
			email := fmt.Sprintf("person%d@example.com", i)
			if i%1000 == 500 {
				email = gone
			}
			fmt.Fprintf(&csv, "%s,Ola%d\n", email, i)
		}
		path := filepath.Join(t.TempDir(), "contacts.csv")
		require.NoError(t, os.WriteFile(path, []byte(csv.String()), 0o600))
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path}}}
		b.cfg.BatchesInFlight = 1
		rt := b.open(t)
		running(t, rt)

		b.emu.SetFaults(sinktest.Faults{Latency: 300 * time.Millisecond})
		syncID, err := rt.EnqueueSync(ctx, "crm", false)
		require.NoError(t, err)
		waitFor(t, time.Minute, "the sync's first batch in flight", func() bool { return b.emu.InFlight() > 0 })
		id, _, err := rt.RequestForget(ctx, []string{gone})
		run := waitRun(t, rt, id, err)
		require.Equal(t, state.RunCompleted, run.State, run.Error)
		waitFor(t, time.Minute, "the sync", func() bool { return runOf(t, rt.State(), syncID).State == state.RunCompleted })
		_, ok := b.emu.SubscriberByEmail(gone)
		require.False(t, ok, "the running sync did not re-add the person")
		require.Len(t, b.emu.ListSubscribers(b.listID), 4995)
		require.Empty(t, scanFor(t, rt.State().DB(), rt.State().Dialect(), gone), "nor into subsync's tables")
		require.Contains(t, b.logs.String(), "waiting for the imports and syncs that began before the erasure to end")
	})
}

// TestForgetFleet: two workers on one Postgres, and forget asked for the same people from
// both at once: each person is deleted in the service once, and one erasure runs at a time.
func TestForgetFleet(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	b := setup(t, "postgres")
	path := contacts(t, t.TempDir(), 50, nil)
	b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path}}}
	var rts []*jobs.Runtime
	for _, id := range []string{"worker-a", "worker-b"} {
		cfg := b.cfg
		cfg.WorkerID = id
		rts = append(rts, b.openWith(t, cfg))
	}
	id, err := rts[0].EnqueueSync(ctx, "crm", false)
	require.Equal(t, int64(50), waitRun(t, rts[0], id, err).Counts.Sent)
	for _, rt := range rts {
		running(t, rt)
	}

	people := []string{"person3@example.com", "person4@example.com", "person5@example.com"}
	var wg sync.WaitGroup
	hashes := make([][]string, len(rts))
	for i, rt := range rts {
		wg.Go(func() {
			var err error
			_, hashes[i], err = rt.RequestForget(ctx, people)
			if err != nil {
				require.ErrorIs(t, err, jobs.ErrAlreadyQueued)
			}
		})
	}
	wg.Wait()
	forgets := func() []state.Run {
		runs, err := rts[0].State().Runs(ctx, state.RunFilter{Kind: state.KindForget})
		require.NoError(t, err)
		return runs
	}
	waitFor(t, time.Minute, "the erasures", func() bool {
		n, err := rts[0].ErasurePending(ctx, hashes[0])
		require.NoError(t, err)
		for _, r := range forgets() {
			if r.State != state.RunCompleted {
				return false
			}
		}
		return n == 0
	})

	deletes := 0
	for _, r := range b.emu.Requests() {
		if r.Method == "DELETE" && strings.HasPrefix(r.Path, sinktest.V2Prefix+"/subscribers/") {
			deletes++
		}
	}
	require.Equal(t, len(people), deletes, "each person deleted once")
	require.Len(t, b.emu.ListSubscribers(b.listID), 47)
	var erased int
	require.NoError(t, rts[0].State().DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_erased").Scan(&erased))
	require.Equal(t, len(people), erased)
	var read int64
	for _, r := range forgets() {
		read += r.Counts.Read
	}
	require.Equal(t, int64(len(people)), read, "each person erased by one run")
}
