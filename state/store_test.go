package state_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// eachDB runs fn as parallel subtests on a fresh, migrated SQLite file and a fresh Postgres
// schema.
func eachDB(t *testing.T, fn func(t *testing.T, s *state.Store)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, newSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, newPostgres(t))
	})
}

func newSQLite(t *testing.T) *state.Store {
	t.Helper()
	db, err := state.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "subsync.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = state.Migrate(context.Background(), db, state.SQLite)
	require.NoError(t, err)
	return state.New(db, state.SQLite)
}

func newPostgres(t *testing.T) *state.Store {
	t.Helper()
	u, _ := testdb.PostgresSchema(t)
	db, err := sql.Open("pgx", u)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = state.Migrate(context.Background(), db, state.Postgres)
	require.NoError(t, err)
	return state.New(db, state.Postgres)
}

func TestMigrate(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		// Already migrated by the helper: again, from several goroutines at once, applies nothing.
		var wg sync.WaitGroup
		errs := make([]error, 4)
		applied := make([][]int, 4)
		for i := range errs {
			wg.Go(func() { applied[i], errs[i] = state.Migrate(ctx, s.DB(), s.Dialect()) })
		}
		wg.Wait()
		for i := range errs {
			require.NoError(t, errs[i])
			require.Empty(t, applied[i])
		}
		var versions int
		require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_migration").Scan(&versions))
		require.Equal(t, len(state.Versions()), versions)
	})

	t.Run("ConcurrentFirstMigration", func(t *testing.T) {
		t.Parallel()

		u, _ := testdb.PostgresSchema(t)
		db, err := sql.Open("pgx", u)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		var wg sync.WaitGroup
		total := make([]int, 3)
		errs := make([]error, 3)
		for i := range total {
			wg.Go(func() {
				var applied []int
				applied, errs[i] = state.Migrate(context.Background(), db, state.Postgres)
				total[i] = len(applied)
			})
		}
		wg.Wait()
		sum := 0
		for i := range total {
			require.NoError(t, errs[i])
			sum += total[i]
		}
		require.Equal(t, len(state.Versions()), sum, "each version is applied exactly once")
	})
}

func claim(jobID int64, owner string, ttl time.Duration) state.Claim {
	return state.Claim{JobID: jobID, Kind: state.KindImport, Name: "contacts.csv", ListID: 7,
		Source: "/data/contacts.csv", Owner: owner, Worker: "w-" + owner, TTL: ttl}
}

func TestClaimRun(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()

		run, err := s.ClaimRun(ctx, claim(11, "a", time.Minute))
		require.NoError(t, err)
		require.Equal(t, state.RunRunning, run.State)
		require.Equal(t, 1, run.Attempts)
		require.Equal(t, "a", run.LeaseOwner)
		require.Equal(t, "w-a", run.Worker)
		require.Equal(t, int64(7), run.ListID)
		require.False(t, run.StartedAt.IsZero())

		// A second worker cannot take a live lease; the owner can re-claim.
		_, err = s.ClaimRun(ctx, claim(11, "b", time.Minute))
		require.ErrorIs(t, err, state.ErrLeaseHeld)
		live, err := s.Accounted(ctx, 11)
		require.NoError(t, err)
		require.True(t, live)
		expired, err := s.ExpiredLeases(ctx)
		require.NoError(t, err)
		require.Empty(t, expired)

		// A released run is claimed again at once, resuming from its checkpoint.
		require.NoError(t, s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "a", TTL: time.Minute,
			Position: 1000, Delta: state.Counts{Read: 1000, Sent: 990, Rejected: 10, Batches: 1, Requests: 1}}))
		require.NoError(t, s.Release(ctx, run.ID, "a", state.RunInterrupted, "worker shut down"))
		got, err := s.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, state.RunInterrupted, got.State)
		require.Empty(t, got.LeaseOwner)

		run2, err := s.ClaimRun(ctx, claim(11, "b", time.Minute))
		require.NoError(t, err)
		require.Equal(t, run.ID, run2.ID)
		require.Equal(t, 2, run2.Attempts)
		require.Equal(t, int64(1000), run2.Position)
		require.Equal(t, int64(990), run2.Counts.Sent)

		// The old owner is fenced out.
		err = s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "a", TTL: time.Minute, Position: 2000,
			Delta: state.Counts{Read: 1000}, Rejects: []state.Reject{{Ordinal: 1500, Line: 1501, Code: "x", Reason: "y"}}})
		require.ErrorIs(t, err, state.ErrLeaseLost)
		require.ErrorIs(t, s.RenewLease(ctx, run.ID, "a", time.Minute), state.ErrLeaseLost)
		require.ErrorIs(t, s.Finish(ctx, run.ID, "a", state.RunCompleted, ""), state.ErrLeaseLost)
		got, err = s.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1000), got.Position)
		require.Equal(t, int64(1000), got.Counts.Read)
		require.Equal(t, 0, countRejects(t, s, run.ID))

		require.NoError(t, s.Finish(ctx, run.ID, "b", state.RunCompleted, ""))
		got, err = s.RunByJob(ctx, 11)
		require.NoError(t, err)
		require.Equal(t, state.RunCompleted, got.State)
		require.False(t, got.FinishedAt.IsZero())
		_, err = s.ClaimRun(ctx, claim(11, "c", time.Minute))
		require.ErrorIs(t, err, state.ErrRunFinished)
		// A finished run holds no lease, yet its job must not be taken over while the queue
		// has not recorded the job's end.
		accounted, err := s.Accounted(ctx, 11)
		require.NoError(t, err)
		require.True(t, accounted, "a finished run is accounted for")

		_, err = s.Run(ctx, 999_999)
		require.ErrorIs(t, err, state.ErrNotFound)
		_, err = s.RunByJob(ctx, 999_999)
		require.ErrorIs(t, err, state.ErrNotFound)
	})
}

func TestClaimRunAfterLeaseExpiry(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, claim(5, "dead", time.Millisecond))
		require.NoError(t, err)

		// The owner died: its lease expires on the database clock and another worker takes over.
		require.Eventually(t, func() bool {
			ids, err := s.ExpiredLeases(ctx)
			require.NoError(t, err)
			return len(ids) == 1 && ids[0] == 5
		}, 5*time.Second, 5*time.Millisecond)
		live, err := s.Accounted(ctx, 5)
		require.NoError(t, err)
		require.False(t, live)

		taken, err := s.ClaimRun(ctx, claim(5, "alive", time.Minute))
		require.NoError(t, err)
		require.Equal(t, run.ID, taken.ID)
		require.Equal(t, "alive", taken.LeaseOwner)
		require.Equal(t, 2, taken.Attempts)
		require.ErrorIs(t, s.RenewLease(ctx, run.ID, "dead", time.Minute), state.ErrLeaseLost)
	})
}

func countRejects(t *testing.T, s *state.Store, runID int64) int {
	t.Helper()
	n := 0
	require.NoError(t, s.Rejects(context.Background(), runID, func(state.Reject) error { n++; return nil }))
	return n
}

func TestCheckpoint(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, claim(1, "o", time.Minute))
		require.NoError(t, err)

		rejects := []state.Reject{
			{Ordinal: 3, Line: 4, Column: "email", Value: "not-an-email", Code: "invalid_email", Reason: "not an e-mail address"},
			{Ordinal: 9, Line: 10, Code: "row_unreadable", Reason: "line 10: wrong number of fields"},
		}
		cp := state.Checkpoint{RunID: run.ID, Owner: "o", TTL: time.Minute, Position: 10, BytesDone: 512,
			Delta: state.Counts{Read: 10, Rejected: 2, Sent: 8, Batches: 1, Requests: 2, Retries: 1}, Rejects: rejects}
		require.NoError(t, s.Checkpoint(ctx, cp))
		// The same rejects again (a resumed run re-reading a row) are recorded once.
		require.NoError(t, s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "o", TTL: time.Minute, Position: 12,
			Delta: state.Counts{Read: 2, Duplicates: 1, Suppressed: 1}, Rejects: rejects[:1]}))

		got, err := s.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, int64(12), got.Position)
		require.Equal(t, state.Counts{Read: 12, Rejected: 2, Duplicates: 1, Suppressed: 1, Sent: 8, Batches: 1,
			Requests: 2, Retries: 1}, got.Counts)

		var all []state.Reject
		require.NoError(t, s.Rejects(ctx, run.ID, func(r state.Reject) error { all = append(all, r); return nil }))
		require.Equal(t, rejects, all)

		// fn's error stops the stream and is returned as is.
		stop := errors.New("stop")
		require.ErrorIs(t, s.Rejects(ctx, run.ID, func(state.Reject) error { return stop }), stop)

		require.NoError(t, s.SetTotals(ctx, run.ID, "o", 100, 4096))
		got, err = s.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, int64(100), got.TotalRows)
		require.Equal(t, int64(4096), got.TotalBytes)
	})
}

func TestRuns(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		for i := int64(1); i <= 5; i++ {
			c := claim(100+i, "o", time.Minute)
			if i%2 == 0 {
				c.Kind, c.Name = state.KindSync, "nightly"
			}
			run, err := s.ClaimRun(ctx, c)
			require.NoError(t, err)
			if i <= 3 {
				require.NoError(t, s.Finish(ctx, run.ID, "o", state.RunFailed, "boom"))
			}
		}
		all, err := s.Runs(ctx, state.RunFilter{})
		require.NoError(t, err)
		require.Len(t, all, 5)
		require.Equal(t, int64(105), all[0].JobID, "newest first")

		syncs, err := s.Runs(ctx, state.RunFilter{Kind: state.KindSync, Name: "nightly"})
		require.NoError(t, err)
		require.Len(t, syncs, 2)

		running, err := s.Runs(ctx, state.RunFilter{States: []state.RunState{state.RunRunning}})
		require.NoError(t, err)
		require.Len(t, running, 2)

		page, err := s.Runs(ctx, state.RunFilter{BeforeID: all[1].ID, Limit: 2})
		require.NoError(t, err)
		require.Len(t, page, 2)
		require.Equal(t, all[2].ID, page[0].ID)

		// A job cancelled while queued gets a cancelled run; an owned run is left alone.
		require.NoError(t, s.CancelQueued(ctx, claim(200, "", 0), "cancelled by user"))
		cancelled, err := s.RunByJob(ctx, 200)
		require.NoError(t, err)
		require.Equal(t, state.RunCancelled, cancelled.State)
		require.Equal(t, "cancelled by user", cancelled.Error)
		require.NoError(t, s.CancelQueued(ctx, claim(105, "", 0), "cancelled by user"))
		owned, err := s.RunByJob(ctx, 105)
		require.NoError(t, err)
		require.Equal(t, state.RunRunning, owned.State)

		// An orphan (no live owner) whose job ended in the queue is closed; an owned run is not.
		changed, err := s.CloseOrphan(ctx, 105, state.RunFailed, "the queue gave up")
		require.NoError(t, err)
		require.False(t, changed)
		_, err = s.ClaimRun(ctx, claim(300, "dead", time.Millisecond))
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			changed, err = s.CloseOrphan(ctx, 300, state.RunFailed, "the queue gave up")
			require.NoError(t, err)
			return changed
		}, 5*time.Second, 5*time.Millisecond)
		orphan, err := s.RunByJob(ctx, 300)
		require.NoError(t, err)
		require.Equal(t, state.RunFailed, orphan.State)
		require.Equal(t, "the queue gave up", orphan.Error)
		require.Empty(t, orphan.LeaseOwner)
		_, err = s.CloseOrphan(ctx, 300, state.RunCompleted, "")
		require.Error(t, err)
	})
}

// exportRows returns the rows of a run's rejects export (copied: ExportRows reuses its slice).
func exportRows(t *testing.T, s *state.Store, runID int64) [][]string {
	t.Helper()
	var rows [][]string
	require.NoError(t, s.ExportRows(context.Background(), runID, func(cells []string) error {
		rows = append(rows, slices.Clone(cells))
		return nil
	}))
	return rows
}

// A run recorded without its source header exports its rejects in the former form; the
// cells are as recorded (the CSV writer quotes formulas, see internal/export).
func TestExportRowsWithoutHeader(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, claim(1, "o", time.Minute))
		require.NoError(t, err)
		values := []string{"=HYPERLINK(\"http://x\")", "+47 123", "plain", ""}
		var rejects []state.Reject
		for i, v := range values {
			rejects = append(rejects, state.Reject{Ordinal: int64(i + 1), Line: i + 2, Column: "phone", Value: v,
				Code: "invalid", Reason: "=bad " + v})
		}
		require.NoError(t, s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "o", TTL: time.Minute,
			Position: int64(len(values)), Rejects: rejects}))

		recs := exportRows(t, s, run.ID)
		require.Equal(t, []string{"line", "sheet", "column", "value", "code", "reason"}, recs[0])
		require.Len(t, recs, len(values)+1)
		for i, v := range values {
			require.Equal(t, []string{fmt.Sprint(i + 2), "", "phone", v, "invalid", "=bad " + v}, recs[i+1])
		}
	})
}

// A run's source delimiter is recorded for its export; none is 0.
func TestSourceDelimiter(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, claim(1, "o", time.Minute))
		require.NoError(t, err)
		d, err := s.SourceDelimiter(ctx, run.ID)
		require.NoError(t, err)
		require.Zero(t, d)
		require.NoError(t, s.SetSourceDelimiter(ctx, run.ID, "o", ';'))
		d, err = s.SourceDelimiter(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, ';', d)
		require.Error(t, s.SetSourceDelimiter(ctx, run.ID, "other", '\t'), "fenced by the lease")
		_, err = s.SourceDelimiter(ctx, run.ID+1)
		require.ErrorIs(t, err, state.ErrNotFound)
	})
}

// TestExportRowsWholeRows: with the source header recorded, the export is the rejected rows
// whole under that header, plus subsync's columns, then the rows sent with warnings (one line
// a row, its problems joined); a resumed run records nothing twice.
func TestExportRowsWholeRows(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, claim(1, "o", time.Minute))
		require.NoError(t, err)
		header := []string{"E-post", "Navn", "Mobil"}
		require.NoError(t, s.SetSourceHeader(ctx, run.ID, "o", header))
		row := func(v ...string) string { return state.EncodeRow(v) }
		cp := state.Checkpoint{RunID: run.ID, Owner: "o", TTL: time.Minute, Position: 6,
			Rejects: []state.Reject{
				{Ordinal: 2, Line: 3, Column: "E-post", Value: "not-an-email", Code: "invalid_email", Reason: "the e-mail address is not valid",
					Row: row("not-an-email", "=Bob", "+47 91 23 45 67")},
				{Ordinal: 4, Line: 5, Code: "row_unreadable", Reason: "wrong number of fields",
					Row: row("x@example.com", "Ragged", "1", "2", "3")},
				{Ordinal: 6, Line: 7, Code: "refused", Reason: "refused", Row: row("dup@example.com", "Dup", "bad")},
			},
			Warnings: []state.Reject{
				{Ordinal: 3, Line: 4, Column: "Mobil", Value: "12", Code: "invalid_phone", Reason: "the phone number is too short",
					Row: row("ada@example.com", "Ada", "12")},
				{Ordinal: 5, Line: 6, Column: "Mobil", Value: "1", Code: "invalid_phone", Reason: "p",
					Row: row("eve@example.com", "Eve", "1")},
				{Ordinal: 5, Line: 6, Column: "Navn", Value: "x", Code: "too_long", Reason: "n",
					Row: row("eve@example.com", "Eve", "1")},
				{Ordinal: 6, Line: 7, Column: "Mobil", Value: "bad", Code: "invalid_phone", Reason: "p",
					Row: row("dup@example.com", "Dup", "bad")},
			}}
		require.NoError(t, s.Checkpoint(ctx, cp))
		cp.Position = 7
		require.NoError(t, s.Checkpoint(ctx, cp), "a resumed run checkpoints the same rows again")

		recs := exportRows(t, s, run.ID)
		require.Equal(t, [][]string{
			{"E-post", "Navn", "Mobil", "subsync:kind", "subsync:line", "subsync:column", "subsync:code", "subsync:reason"},
			{"not-an-email", "=Bob", "+47 91 23 45 67", "rejected", "3", "E-post", "invalid_email", "the e-mail address is not valid"},
			{"x@example.com", "Ragged", "1, 2, 3", "rejected", "5", "", "row_unreadable", "wrong number of fields"},
			{"dup@example.com", "Dup", "bad", "rejected", "7", "", "refused", "refused"},
			{"ada@example.com", "Ada", "12", "warning", "4", "Mobil", "invalid_phone", "the phone number is too short"},
			{"eve@example.com", "Eve", "1", "warning", "6", "Mobil; Navn", "invalid_phone; too_long", "p; n"},
		}, recs)

		counts, err := s.WarningCounts(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"invalid_phone": 3, "too_long": 1}, counts)
		var warned []int64
		require.NoError(t, s.Warnings(ctx, run.ID, func(r state.Reject) error { warned = append(warned, r.Ordinal); return nil }))
		require.Equal(t, []int64{3, 5, 5, 6}, warned)
	})
}

func TestFingerprints(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		has, err := s.HasFingerprints(ctx, 7)
		require.NoError(t, err)
		require.False(t, has)
		empty, err := s.LoadFingerprints(ctx, 7)
		require.NoError(t, err)
		require.Zero(t, empty.Len())

		// 20,000 e-mails over every bucket, one added twice (the later wins), another list
		// beside; hashes use all 64 bits.
		set := state.NewFingerprintSet(7)
		var emails []uint64
		for i := range 20_000 {
			e := state.EmailHash(fmt.Sprintf("person%d@example.com", i))
			emails = append(emails, e)
			set.Add(state.Fingerprint{Email: e, Payload: uint64(i)})
		}
		set.Add(state.Fingerprint{Email: emails[0], Payload: 4242})
		set.Add(state.Fingerprint{Email: 1 << 63, Payload: ^uint64(0)})
		require.Equal(t, 20_002, set.Pending())
		require.NoError(t, s.SaveFingerprints(ctx, set))
		require.Zero(t, set.Pending())
		other := state.NewFingerprintSet(8)
		other.Add(state.Fingerprint{Email: emails[1], Payload: 1})
		require.NoError(t, s.SaveFingerprints(ctx, other))

		got, err := s.LoadFingerprints(ctx, 7)
		require.NoError(t, err)
		require.Equal(t, 20_001, got.Len())
		p, ok := lookup(got, emails[0])
		require.True(t, ok)
		require.Equal(t, uint64(4242), p)
		p, ok = lookup(got, emails[19_999])
		require.True(t, ok)
		require.Equal(t, uint64(19_999), p)
		p, ok = lookup(got, 1<<63)
		require.True(t, ok)
		require.Equal(t, ^uint64(0), p)
		_, ok = lookup(got, state.EmailHash("nobody@example.com"))
		require.False(t, ok)

		// A later run's save merges into what is stored: changed entries replaced, new ones
		// added, the rest kept; a set loaded earlier still answers from what it loaded.
		next := state.NewFingerprintSet(7)
		next.Add(state.Fingerprint{Email: emails[5], Payload: 555})
		next.Add(state.Fingerprint{Email: state.EmailHash("new@example.com"), Payload: 9})
		require.NoError(t, s.SaveFingerprints(ctx, next))
		again, err := s.LoadFingerprints(ctx, 7)
		require.NoError(t, err)
		require.Equal(t, 20_002, again.Len())
		p, _ = lookup(again, emails[5])
		require.Equal(t, uint64(555), p)
		p, _ = lookup(again, emails[6])
		require.Equal(t, uint64(6), p)
		p, _ = lookup(got, emails[5])
		require.Equal(t, uint64(5), p)

		has, err = s.HasFingerprints(ctx, 7)
		require.NoError(t, err)
		require.True(t, has)
		require.NoError(t, s.ForgetFingerprints(ctx, 7))
		has, err = s.HasFingerprints(ctx, 7)
		require.NoError(t, err)
		require.False(t, has)
		kept, err := s.LoadFingerprints(ctx, 8)
		require.NoError(t, err)
		require.Equal(t, 1, kept.Len())
	})
}

// TestFingerprintTiers saves fingerprints as runs do, in large saves (a part of each bucket)
// and small ones (recent changes) mixed, until a bucket's parts are merged, and checks
// after every save that a load gives each e-mail the payload it was saved with last: no
// entry lost, none stale, whichever tier it is in. Erasure removes an address from every
// tier.
// TestFingerprintLoadLeavesConnections: loading fingerprints from SQLite maps the database
// file on the connections it reads with, and gives them back unmapped: the pool's other users
// (a run's checkpoints, an import's writes) do not read through a memory map.
func TestFingerprintLoadLeavesConnections(t *testing.T) {
	t.Parallel()
	s := newSQLite(t)
	ctx := context.Background()
	set := state.NewFingerprintSet(1)
	for i := range 20_000 {
		set.Add(state.Fingerprint{Email: uint64(i) * 0x9E3779B97F4A7C15, Payload: uint64(i)})
	}
	require.NoError(t, s.SaveFingerprints(ctx, set))
	loaded, err := s.LoadFingerprints(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, 20_000, loaded.Len())
	open := s.DB().Stats().OpenConnections // those the load read on among them
	conns := make([]*sql.Conn, open)       // every connection of the pool, held at once
	for i := range conns {
		c, err := s.DB().Conn(ctx)
		require.NoError(t, err)
		defer c.Close()
		conns[i] = c
	}
	require.Equal(t, open, s.DB().Stats().OpenConnections, "no connection was opened for the check")
	for _, c := range conns {
		var size int64
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&size))
		require.Zero(t, size)
	}
}

func TestFingerprintTiers(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		rnd := rand.New(rand.NewPCG(1, 2))
		want := map[uint64]uint64{} // e-mail hash → payload last saved
		emails := make([]uint64, 60_000)
		for i := range emails {
			emails[i] = state.EmailHash(fmt.Sprintf("tier%d@example.com", i))
		}
		check := func(step int) {
			requireFingerprints(t, s, 3, want, fmt.Sprintf("save %d", step))
			n, err := s.FingerprintCount(ctx, 3)
			require.NoError(t, err)
			require.GreaterOrEqual(t, n, int64(len(want)), "save %d", step)
		}
		folded := false
		for step := 1; step <= 14; step++ {
			loaded, err := s.LoadFingerprints(ctx, 3)
			require.NoError(t, err)
			size := 25_000 // a large save: a part of each bucket
			if step%3 == 0 {
				size = 300 // a small one: recent changes
			}
			before, rowsBefore := bucketRows(t, s, 3)
			for range size {
				e := emails[rnd.IntN(len(emails))]
				p := rnd.Uint64()
				loaded.Add(state.Fingerprint{Email: e, Payload: p})
				want[e] = p // an e-mail added twice: the later wins
			}
			require.NoError(t, s.SaveFingerprints(ctx, loaded))
			after, rowsAfter := bucketRows(t, s, 3)
			switch {
			case size == 300:
				require.Equal(t, rowsBefore, rowsAfter, "save %d: a small save adds no part", step)
			case rowsAfter < rowsBefore:
				folded = true // buckets with 8 parts had them merged into one
			default:
				require.Greater(t, rowsAfter, rowsBefore, "save %d: a large save adds parts", step)
				require.GreaterOrEqual(t, after, before, "save %d", step)
			}
			require.LessOrEqual(t, after, 8, "save %d: a bucket has at most 8 parts", step)
			check(step)
		}
		require.True(t, folded, "the parts were never merged")

		// Erasing an address removes it from whichever tiers hold it.
		loaded, err := s.LoadFingerprints(ctx, 3)
		require.NoError(t, err)
		for i := range 25_000 {
			loaded.Add(state.Fingerprint{Email: emails[i], Payload: 7})
			want[emails[i]] = 7
		}
		require.NoError(t, s.SaveFingerprints(ctx, loaded))
		most, _ := bucketRows(t, s, 3)
		require.Greater(t, most, 1)
		_, err = s.Erase(ctx, "tier17@example.com")
		require.NoError(t, err)
		delete(want, emails[17])
		check(15)
		got, err := s.LoadFingerprints(ctx, 3)
		require.NoError(t, err)
		_, ok := lookup(got, emails[17])
		require.False(t, ok, "an erased address keeps no fingerprint")

		require.NoError(t, s.ForgetFingerprints(ctx, 3))
		most, _ = bucketRows(t, s, 3)
		require.Zero(t, most)
		has, err := s.HasFingerprints(ctx, 3)
		require.NoError(t, err)
		require.False(t, has)
	})
}

// TestFingerprintSaveInSteps: a large save with no recent changes is written a few hundred
// buckets at a time, calling between after each step (a run writes its checkpoints there);
// fingerprints added meanwhile are saved, by the steps to come or, in buckets already
// written, by the next save, and an e-mail added again keeps its later payload.
func TestFingerprintSaveInSteps(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		want := map[uint64]uint64{}
		set := state.NewFingerprintSet(4)
		for i := range 40_000 {
			e := state.EmailHash(fmt.Sprintf("step%d@example.com", i))
			set.Add(state.Fingerprint{Email: e, Payload: 1})
			want[e] = 1
		}
		steps, rowsAt := 0, []int{}
		require.NoError(t, s.SaveFingerprintsStepped(ctx, set, func() {
			steps++
			var n int
			require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_fingerprint WHERE list_id = 4").Scan(&n))
			rowsAt = append(rowsAt, n)
			// Meanwhile a checkpoint records more rows: one new e-mail, one seen before.
			e := state.EmailHash(fmt.Sprintf("between%d@example.com", steps))
			set.Add(state.Fingerprint{Email: e, Payload: 2})
			want[e] = 2
			old := state.EmailHash(fmt.Sprintf("step%d@example.com", steps*1000))
			set.Add(state.Fingerprint{Email: old, Payload: 3})
			want[old] = 3
		}))
		require.Equal(t, 16, steps)
		require.True(t, slices.IsSorted(rowsAt) && rowsAt[0] > 0 && rowsAt[0] < rowsAt[len(rowsAt)-1],
			"each step commits its buckets: %v", rowsAt)
		require.Positive(t, set.Pending(), "what was added to buckets already written waits for the next save")
		require.Less(t, set.Pending(), 2*steps)
		require.NoError(t, s.SaveFingerprintsStepped(ctx, set, nil))
		require.Zero(t, set.Pending())

		got, err := s.LoadFingerprints(ctx, 4)
		require.NoError(t, err)
		require.Equal(t, len(want), got.Len())
		for e, p := range want {
			v, ok := lookup(got, e)
			require.True(t, ok, "an e-mail lost")
			require.Equal(t, p, v, "a stale payload")
		}
	})
}

// hashOf hashes strings in order with a state.Hasher, as a run hashes a payload.
func hashOf(parts ...string) uint64 {
	h := state.NewHasher()
	for _, p := range parts {
		h.String(p)
	}
	return h.Sum64()
}

func TestHashes(t *testing.T) {
	t.Parallel()

	// Hashes are stored: their values must never change.
	require.Equal(t, uint64(0x9e65c26e665051c7), state.EmailHash("ola.nordmann@example.no"))
	require.Equal(t, uint64(0x5ed57b1525226d1e), hashOf("m1", "active", "", "ola.nordmann@example.no", "Ola"))

	require.Equal(t, state.EmailHash("Ola.Nordmann@Example.NO "), state.EmailHash("ola.nordmann@example.no"))
	require.NotEqual(t, state.EmailHash("a@example.com"), state.EmailHash("b@example.com"))
	require.Equal(t, hashOf("m1", "", "", "a@example.com", "Ola"), hashOf("m1", "", "", "a@example.com", "Ola"))
	require.NotEqual(t, hashOf("m1", "", "", "a@example.com"), hashOf("m2", "", "", "a@example.com"), "mapping changed")
	require.NotEqual(t, hashOf("m1", "active", "", "a@example.com"), hashOf("m1", "", "active", "a@example.com"), "status in its place")
	require.NotEqual(t, hashOf("m1", "", "", "ab", "c"), hashOf("m1", "", "", "a", "bc"), "field boundaries")
	require.NotEqual(t, hashOf("m1", "", "", "a@example.com", "Ola"), hashOf("m1", "", "", "a@example.com", "Olb"))

	// A million similar addresses: no collision, and every fingerprint bucket in use.
	seen := make(map[uint64]bool, 1_000_000)
	buckets := make(map[uint64]bool)
	for i := range 1_000_000 {
		h := state.EmailHash(fmt.Sprintf("person%d@example.com", i))
		require.False(t, seen[h], "collision at %d", i)
		seen[h] = true
		buckets[h>>52] = true
	}
	require.Len(t, buckets, state.FingerprintBuckets)
}

func TestStatusChanges(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
		changes := []state.StatusChange{
			{Email: "Kari@Example.no", Status: sink.StatusUnsubscribed, ListID: 7, SubscriberID: 1, ChangedAt: t0},
			{Email: "per@example.no", Status: sink.StatusBounce, ListID: 7, SubscriberID: 2, ChangedAt: t0.Add(time.Second)},
			{Email: "ola@example.no", Status: sink.StatusUnsubscribed, ListID: 8, SubscriberID: 3, ChangedAt: t0},
			{Email: "lise@example.no", Status: sink.StatusUnsubscribed, ListID: state.AllLists, SubscriberID: 4, ChangedAt: t0},
		}
		added, err := s.RecordStatusChanges(ctx, changes, []string{"crm"})
		require.NoError(t, err)
		require.Equal(t, 4, added)
		// Pulling the same changes again changes nothing.
		added, err = s.RecordStatusChanges(ctx, changes, []string{"crm"})
		require.NoError(t, err)
		require.Zero(t, added)

		has, err := s.HasSuppressions(ctx, 7)
		require.NoError(t, err)
		require.True(t, has)
		has, err = s.HasSuppressions(ctx, 99)
		require.NoError(t, err)
		require.True(t, has, "an all-lists suppression applies to every list")

		sup, err := s.Suppressed(ctx, 7, []string{"kari@example.no", "PER@example.no", "ola@example.no", "lise@example.no", "new@example.no"})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"kari@example.no": "unsubscribed", "per@example.no": "bounce",
			"ola@example.no": "unsubscribed", "lise@example.no": "unsubscribed"}, sup,
			"account-wide: Ola unsubscribed from list 8 is suppressed in list 7 too")

		// An older "active" does not lift a newer unsubscribe; a newer one does.
		_, err = s.RecordStatusChanges(ctx, []state.StatusChange{
			{Email: "kari@example.no", Status: sink.StatusActive, ListID: 7, ChangedAt: t0.Add(-time.Hour)},
			{Email: "per@example.no", Status: sink.StatusActive, ListID: 7, ChangedAt: t0.Add(time.Hour)},
		}, nil)
		require.NoError(t, err)
		sup, err = s.Suppressed(ctx, 7, []string{"kari@example.no", "per@example.no"})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"kari@example.no": "unsubscribed"}, sup)

		log, err := s.StatusChanges(ctx, "KARI@example.no", 0)
		require.NoError(t, err)
		require.Len(t, log, 2)
		require.Equal(t, sink.StatusActive, log[0].Status, "oldest first")
		require.Equal(t, t0, log[1].ChangedAt)

		wbs, err := s.PendingWriteBacks(ctx, "crm", 0)
		require.NoError(t, err)
		require.Len(t, wbs, 4, "queued once per new change for each target")
		require.Equal(t, "kari@example.no", wbs[0].Change.Email)
		require.NoError(t, s.CompleteWriteBack(ctx, wbs[0].ID, nil))
		require.NoError(t, s.CompleteWriteBack(ctx, wbs[1].ID, errors.New("crm down")))
		wbs, err = s.PendingWriteBacks(ctx, "crm", 0)
		require.NoError(t, err)
		require.Len(t, wbs, 3)
		require.Equal(t, "crm down", wbs[0].LastError)
		require.Equal(t, 1, wbs[0].Attempts)

		require.NoError(t, s.Suppress(ctx, []state.Suppression{{ListID: 9, Email: "x@example.no", Status: sink.StatusBounce, ChangedAt: t0}}))
		require.Error(t, s.Suppress(ctx, []state.Suppression{{ListID: 9, Email: "y@example.no", Status: "active", ChangedAt: t0}}))
	})
}

func TestStatusCursor(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		c, err := s.StatusCursor(ctx, "default")
		require.NoError(t, err)
		require.True(t, c.IsZero())
		t1 := time.Date(2025, 3, 1, 10, 0, 0, 123000, time.UTC)
		require.NoError(t, s.AdvanceStatusCursor(ctx, "default", t1))
		require.NoError(t, s.AdvanceStatusCursor(ctx, "default", t1.Add(-time.Hour)))
		c, err = s.StatusCursor(ctx, "default")
		require.NoError(t, err)
		require.Equal(t, t1, c, "never moves backwards")
	})
}

func TestStagedFile(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		// Incompressible content spanning several chunks.
		content := make([]byte, 2*state.StagedChunkSize+12345)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range content {
			content[i] = byte(r.Uint32())
		}
		f, err := s.StageFile(ctx, "contacts.csv", bytes.NewReader(content))
		require.NoError(t, err)
		require.Equal(t, int64(len(content)), f.Size)
		require.GreaterOrEqual(t, f.Chunks, 3)

		rc, err := s.OpenStaged(ctx, f.ID)
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		require.True(t, bytes.Equal(content, got), "staged content round-trips")

		info, err := s.StagedFileInfo(ctx, f.ID)
		require.NoError(t, err)
		require.Equal(t, "contacts.csv", info.Name)

		require.NoError(t, s.DeleteStaged(ctx, f.ID))
		_, err = s.OpenStaged(ctx, f.ID)
		require.ErrorIs(t, err, state.ErrNotFound)
		var chunks int
		require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_staged_chunk").Scan(&chunks))
		require.Zero(t, chunks)
		require.NoError(t, s.DeleteStaged(ctx, f.ID), "deleting twice is fine")
	})
}

// BenchmarkFingerprints saves a million fingerprints (a first import of a million rows),
// loads them (a sync's start) and looks each up (a sync's delta check).
func BenchmarkFingerprints(b *testing.B) {
	db, err := state.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "subsync.db"))
	require.NoError(b, err)
	defer db.Close()
	_, err = state.Migrate(context.Background(), db, state.SQLite)
	require.NoError(b, err)
	s := state.New(db, state.SQLite)
	ctx := context.Background()
	const n = 1_000_000
	emails := make([]uint64, n)
	for i := range emails {
		emails[i] = state.EmailHash("p" + strconv.Itoa(i) + "@example.com")
	}
	for b.Loop() {
		set := state.NewFingerprintSet(1)
		for i, e := range emails {
			set.Add(state.Fingerprint{Email: e, Payload: uint64(i)})
		}
		start := time.Now()
		require.NoError(b, s.SaveFingerprints(ctx, set))
		saved := time.Since(start)
		start = time.Now()
		loaded, err := s.LoadFingerprints(ctx, 1)
		require.NoError(b, err)
		load := time.Since(start)
		start = time.Now()
		for _, e := range emails {
			if _, ok := lookup(loaded, e); !ok {
				b.Fatal("lost a fingerprint")
			}
		}
		lookup := time.Since(start)
		start = time.Now()
		fps, found := make([]state.Fingerprint, 1000), make([]bool, 1000)
		for i := 0; i < n; i += 1000 {
			require.NoError(b, loaded.LookupBatch(emails[i:i+1000], fps, found, nil))
			if !found[999] || fps[999].Payload != uint64(i+999) {
				b.Fatal("lost a fingerprint")
			}
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/n, "ns/batched-lookup")
		b.ReportMetric(float64(lookup.Nanoseconds())/n, "ns/lookup")
		b.ReportMetric(saved.Seconds(), "save-s")
		b.ReportMetric(load.Seconds(), "load-s")
		require.NoError(b, s.ForgetFingerprints(ctx, 1))
	}
}

// BenchmarkFingerprintsImport saves a million fingerprints as a run of a million rows does,
// every jobs.FingerprintFlushDefault (250,000) rows, and loads them as the next sync does:
// save-s is the four saves together, the cost a first import pays for its delta. Then it
// saves a nightly sync's 10,000 changes (kept as recent changes: save-changes-s) and loads
// again, as the sync after it does (load-after-changes-s).
func BenchmarkFingerprintsImport(b *testing.B) {
	db, err := state.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "subsync.db"))
	require.NoError(b, err)
	defer db.Close()
	_, err = state.Migrate(context.Background(), db, state.SQLite)
	require.NoError(b, err)
	s := state.New(db, state.SQLite)
	ctx := context.Background()
	const n, flush = 1_000_000, 250_000
	emails := make([]uint64, n)
	for i := range emails {
		emails[i] = state.EmailHash("p" + strconv.Itoa(i) + "@example.com")
	}
	for b.Loop() {
		set := state.NewFingerprintSet(1)
		start := time.Now()
		for i, e := range emails {
			set.Add(state.Fingerprint{Email: e, Payload: uint64(i)})
			if set.Pending() == flush {
				require.NoError(b, s.SaveFingerprints(ctx, set))
			}
		}
		require.NoError(b, s.SaveFingerprints(ctx, set))
		saved := time.Since(start)
		start = time.Now()
		loaded, err := s.LoadFingerprints(ctx, 1)
		require.NoError(b, err)
		load := time.Since(start)
		if loaded.Len() != n {
			b.Fatalf("loaded %d fingerprints, want %d", loaded.Len(), n)
		}
		// A nightly sync's changes (1%) are saved as recent changes; the next sync loads
		// them with the buckets.
		for i := 0; i < n; i += 100 {
			set.Add(state.Fingerprint{Email: emails[i], Payload: uint64(i) + 1})
		}
		start = time.Now()
		require.NoError(b, s.SaveFingerprints(ctx, set))
		saveChanges := time.Since(start)
		start = time.Now()
		loaded, err = s.LoadFingerprints(ctx, 1)
		require.NoError(b, err)
		loadRecent := time.Since(start)
		if fp, _, _ := loaded.Lookup(emails[100]); fp.Payload != 101 {
			b.Fatalf("loaded payload %d for a changed row, want 101", fp.Payload)
		}
		b.ReportMetric(saved.Seconds(), "save-s")
		b.ReportMetric(load.Seconds(), "load-s")
		b.ReportMetric(loadRecent.Seconds(), "load-after-changes-s")
		b.ReportMetric(saveChanges.Seconds(), "save-changes-s")
		require.NoError(b, s.ForgetFingerprints(ctx, 1))
	}
}

func TestSuppressionSetAndVersion(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
		set, err := s.LoadSuppressions(ctx, 7)
		require.NoError(t, err)
		require.Zero(t, set.Len())
		v0 := set.Version()

		// Recording changes that suppress bumps the version in the same transaction.
		_, err = s.RecordStatusChanges(ctx, []state.StatusChange{
			{Email: "Kari@Example.no", Status: sink.StatusUnsubscribed, ListID: 7, ChangedAt: t0},
			{Email: "per@example.no", Status: sink.StatusBounce, ListID: 7, ChangedAt: t0},
			{Email: "ola@example.no", Status: sink.StatusBounce, ListID: 8, ChangedAt: t0},
			{Email: "lise@example.no", Status: sink.StatusUnsubscribed, ListID: state.AllLists, ChangedAt: t0},
		}, nil)
		require.NoError(t, err)
		v1, err := s.SuppressionVersion(ctx)
		require.NoError(t, err)
		require.Greater(t, v1, v0)
		set, err = s.LoadSuppressions(ctx, 7)
		require.NoError(t, err)
		require.Equal(t, v1, set.Version())
		require.Equal(t, 4, set.Len(), "every list's: a status is the person's, not a list's")
		st, ok := set.Status(state.EmailHash("kari@example.no"))
		require.True(t, ok)
		require.Equal(t, sink.StatusUnsubscribed, st)
		st, ok = set.Status(state.EmailHash(" PER@example.no"))
		require.True(t, ok)
		require.Equal(t, sink.StatusBounce, st, "an unsubscribe and a bounce stay distinct")
		st, ok = set.Status(state.EmailHash("ola@example.no"))
		require.True(t, ok, "bounced in list 8: suppressed in list 7 too")
		require.Equal(t, sink.StatusBounce, st)

		// The same changes again change nothing, not even the version.
		_, err = s.RecordStatusChanges(ctx, []state.StatusChange{
			{Email: "kari@example.no", Status: sink.StatusUnsubscribed, ListID: 7, ChangedAt: t0},
		}, nil)
		require.NoError(t, err)
		v2, err := s.SuppressionVersion(ctx)
		require.NoError(t, err)
		require.Equal(t, v1, v2)

		// Lifting one bumps it.
		_, err = s.RecordStatusChanges(ctx, []state.StatusChange{
			{Email: "kari@example.no", Status: sink.StatusActive, ListID: 7, ChangedAt: t0.Add(time.Hour)},
		}, nil)
		require.NoError(t, err)
		v3, err := s.SuppressionVersion(ctx)
		require.NoError(t, err)
		require.Greater(t, v3, v2)

		counts, err := s.SuppressionCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, []state.SuppressionCount{
			{ListID: state.AllLists, Status: sink.StatusUnsubscribed, Count: 1},
			{ListID: 7, Status: sink.StatusBounce, Count: 1},
			{ListID: 8, Status: sink.StatusBounce, Count: 1},
		}, counts)
	})
}

func TestRecordReconciled(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
		_, err := s.RecordStatusChanges(ctx, []state.StatusChange{
			{Email: "kari@example.no", Status: sink.StatusUnsubscribed, ListID: 7, ChangedAt: t0},
		}, []string{"crm"})
		require.NoError(t, err)
		// A reconciliation sees Kari again (with the subscriber's own time), and Per, whom the
		// feed missed, and Ola, who now bounces.
		added, err := s.RecordReconciled(ctx, []state.StatusChange{
			{Email: "kari@example.no", Status: sink.StatusUnsubscribed, ListID: 7, ChangedAt: t0.Add(time.Minute)},
			{Email: "per@example.no", Status: sink.StatusBounce, ListID: 7, ChangedAt: t0},
		}, []string{"crm"})
		require.NoError(t, err)
		require.Equal(t, 1, added, "only what the suppression list lacks")
		wbs, err := s.PendingWriteBacks(ctx, "crm", 0)
		require.NoError(t, err)
		require.Len(t, wbs, 2)
		require.Equal(t, "kari@example.no", wbs[0].Change.Email)
		require.Equal(t, "per@example.no", wbs[1].Change.Email)
	})
}

func TestWriteBackSummaries(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
		var changes []state.StatusChange
		for i := range 5 {
			// Recorded newest first: write-backs still come oldest first.
			changes = append(changes, state.StatusChange{Email: fmt.Sprintf("p%d@example.no", i), Status: sink.StatusBounce,
				ListID: 7, ChangedAt: t0.Add(-time.Duration(i) * time.Minute)})
		}
		_, err := s.RecordStatusChanges(ctx, changes, []string{"sql"})
		require.NoError(t, err)
		wbs, err := s.PendingWriteBacks(ctx, "sql", 0)
		require.NoError(t, err)
		require.Len(t, wbs, 5)
		require.Equal(t, "p4@example.no", wbs[0].Change.Email)
		require.Equal(t, "p0@example.no", wbs[4].Change.Email)
		ids := []int64{wbs[0].ID, wbs[1].ID}
		require.NoError(t, s.CompleteWriteBacks(ctx, ids, errors.New("source database down")))
		require.NoError(t, s.CompleteWriteBacks(ctx, []int64{wbs[2].ID}, nil))

		sum, err := s.WriteBackSummaries(ctx)
		require.NoError(t, err)
		require.Equal(t, []state.WriteBackSummary{{Target: "sql", Pending: 4, Failing: 2, Done: 1,
			OldestPending: t0.Add(-4 * time.Minute), LastError: "source database down"}}, sum)

		require.NoError(t, s.CompleteWriteBacks(ctx, ids, nil))
		wbs, err = s.PendingWriteBacks(ctx, "sql", 0)
		require.NoError(t, err)
		require.Len(t, wbs, 2)
		sum, err = s.WriteBackSummaries(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(0), sum[0].Failing)
		require.Equal(t, int64(3), sum[0].Done)
	})
}

// TestFingerprintLookup checks Lookup against a map, for present and absent e-mails, in
// buckets of every size (empty, one entry, crowded: the first and the last), and the e-mail
// hash 0.
func TestFingerprintLookup(t *testing.T) {
	t.Parallel()
	s := newSQLite(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[uint64]uint64{}
	set := state.NewFingerprintSet(3)
	for i := range 20_000 {
		e := rng.Uint64()
		switch i % 3 {
		case 0:
			e &= 0x000f_ffff_ffff_ffff // crowd bucket 0
		case 1:
			e |= 0xfff0_0000_0000_0000 // and the last
		}
		want[e] = uint64(i)
		set.Add(state.Fingerprint{Email: e, Payload: uint64(i), Source: uint64(i) * 3})
	}
	// The extremes of a bucket.
	for _, e := range []uint64{0, 1<<52 - 1, 1 << 52, ^uint64(0)} {
		want[e] = e ^ 7
		set.Add(state.Fingerprint{Email: e, Payload: e ^ 7, Source: (e ^ 7) * 3})
	}
	require.NoError(t, s.SaveFingerprints(ctx, set))
	loaded, err := s.LoadFingerprints(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, len(want), loaded.Len())
	for e, p := range want {
		got, ok, err := loaded.Lookup(e)
		require.NoError(t, err)
		require.True(t, ok, "%x", e)
		require.Equal(t, state.Fingerprint{Email: e, Payload: p, Source: p * 3}, got)
		for _, near := range []uint64{e - 1, e + 1, rng.Uint64()} {
			if _, present := want[near]; !present {
				_, ok := lookup(loaded, near)
				require.False(t, ok, "%x", near)
			}
		}
	}
}

// TestFingerprintIndex: whatever the number loaded (none, a few, many), Index is a number
// below IndexBound, a different one for each entry, and LookupBatch finds what Lookup finds.
func TestFingerprintIndex(t *testing.T) {
	t.Parallel()
	s := newSQLite(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	for list, n := range []int{0, 1, 3, 4, 5, 9, 1000, 50_000} {
		set := state.NewFingerprintSet(int64(list))
		var emails []uint64
		for i := range n {
			e := rng.Uint64()
			if i == 0 {
				e = ^uint64(0)
			}
			emails = append(emails, e)
			set.Add(state.Fingerprint{Email: e, Payload: uint64(i)})
		}
		require.NoError(t, s.SaveFingerprints(ctx, set))
		loaded, err := s.LoadFingerprints(ctx, int64(list))
		require.NoError(t, err)
		require.Equal(t, n, loaded.Len())
		taken := map[int]bool{}
		for _, e := range emails {
			i, ok, err := loaded.Index(e)
			require.NoError(t, err)
			require.True(t, ok, "n=%d %x", n, e)
			require.False(t, taken[i], "n=%d: index %d twice", n, i)
			require.True(t, i >= 0 && i < loaded.IndexBound(), "n=%d: index %d of %d", n, i, loaded.IndexBound())
			taken[i] = true
		}
		probe := append(slices.Clone(emails), 0, 1, rng.Uint64(), rng.Uint64())
		fps, found, idx := make([]state.Fingerprint, len(probe)), make([]bool, len(probe)), make([]int32, len(probe))
		require.NoError(t, loaded.LookupBatch(probe, fps, found, idx))
		for k, e := range probe {
			fp, ok, err := loaded.Lookup(e)
			require.NoError(t, err)
			i, _, err := loaded.Index(e)
			require.NoError(t, err)
			require.Equal(t, ok, found[k], "n=%d %x", n, e)
			require.Equal(t, fp, fps[k])
			if ok {
				require.Equal(t, int32(i), idx[k])
			}
		}
	}
}

// TestFingerprintRecentChanges: a few changes are kept beside the buckets and merged in on
// load; once they grow past the limit they are merged into the buckets.
func TestFingerprintRecentChanges(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		recentRows := func() int {
			var n int
			require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_fingerprint_recent").Scan(&n))
			return n
		}
		email := func(i int) uint64 { return state.EmailHash(fmt.Sprintf("p%d@example.com", i)) }
		set := state.NewFingerprintSet(5)
		for i := range 30_000 {
			set.Add(state.Fingerprint{Email: email(i), Payload: 1})
		}
		require.NoError(t, s.SaveFingerprints(ctx, set))
		require.Zero(t, recentRows(), "a first save of many goes to the buckets")

		for round := 2; round <= 5; round++ {
			set, err := s.LoadFingerprints(ctx, 5)
			require.NoError(t, err)
			require.Equal(t, min(30_000+round-2, 30_001), set.Len())
			// 6,000 rows change: kept as recent changes until they pass 20,000.
			for i := range 6_000 {
				set.Add(state.Fingerprint{Email: email(i*5 + round - 1), Payload: uint64(round), Source: uint64(round) << 32})
			}
			set.Add(state.Fingerprint{Email: email(99_999), Payload: uint64(round)}) // a new one
			set.Add(state.Fingerprint{Email: email(99_999), Payload: uint64(round) + 100})
			require.NoError(t, s.SaveFingerprints(ctx, set))
			if round < 5 {
				require.Equal(t, 6001*(round-1)-(round-2), recentRows())
			} else {
				require.Zero(t, recentRows(), "merged into the buckets")
			}
			loaded, err := s.LoadFingerprints(ctx, 5)
			require.NoError(t, err)
			require.Equal(t, 30_001, loaded.Len())
			for i := range 6_000 {
				fp, ok, err := loaded.Lookup(email(i*5 + round - 1))
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, uint64(round), fp.Payload)
				require.Equal(t, uint64(round)<<32, fp.Source)
			}
			p, ok := lookup(loaded, email(99_999))
			require.True(t, ok)
			require.Equal(t, uint64(round)+100, p, "the later of two wins")
			p, ok = lookup(loaded, email(29_995)) // no round changes a multiple of 5
			require.True(t, ok)
			require.Equal(t, uint64(1), p, "untouched")
		}
		has, err := s.HasFingerprints(ctx, 5)
		require.NoError(t, err)
		require.True(t, has)
		require.NoError(t, s.ForgetFingerprints(ctx, 5))
		has, err = s.HasFingerprints(ctx, 5)
		require.NoError(t, err)
		require.False(t, has)
	})
}

// lookup returns the payload hash stored for an e-mail hash.
func lookup(f *state.FingerprintSet, email uint64) (uint64, bool) {
	fp, ok, err := f.Lookup(email)
	if err != nil {
		panic(err) // a set in memory: never
	}
	return fp.Payload, ok
}

// TestFingerprintMemory: holding and saving the fingerprints of a large run (an import of a
// million rows holds up to jobs.FingerprintFlushDefault of them) costs about what they are,
// 24 bytes each: adding them does not copy them as they grow, and saving them does not copy
// them all to sort them (one bucket at a time). Not parallel: it counts the bytes the process
// allocates.
func TestFingerprintMemory(t *testing.T) {
	s := newSQLite(t)
	ctx := context.Background()
	const n = 400_000
	const size = n * 24
	emails := make([]uint64, n)
	for i := range emails {
		emails[i] = state.EmailHash("p" + strconv.Itoa(i) + "@example.com")
	}
	allocated := func(fn func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	set := state.NewFingerprintSet(1)
	add := allocated(func() {
		for i, e := range emails {
			set.Add(state.Fingerprint{Email: e, Payload: uint64(i), Source: uint64(i)})
		}
	})
	t.Logf("adding %d fingerprints (%d bytes) allocated %d bytes", n, size, add)
	require.Less(t, add, uint64(size)*3/2, "adding")
	save := allocated(func() { require.NoError(t, s.SaveFingerprints(ctx, set)) })
	// The driver copies each bucket's data as it writes it (transient: one bucket at a time).
	t.Logf("saving them allocated %d bytes", save)
	require.Less(t, save, uint64(size), "saving")

	// Kept for the next ones: a second round allocates next to nothing for them.
	again := allocated(func() {
		for i, e := range emails {
			set.Add(state.Fingerprint{Email: e, Payload: uint64(i) + 1, Source: uint64(i)})
		}
	})
	require.Less(t, again, uint64(size)/10, "adding after a save")
	require.NoError(t, s.SaveFingerprints(ctx, set))
	loaded, err := s.LoadFingerprints(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, n, loaded.Len())
	for i, e := range emails {
		fp, ok, err := loaded.Lookup(e)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, state.Fingerprint{Email: e, Payload: uint64(i) + 1, Source: uint64(i)}, fp)
	}
}

// TestAckedBatches: a checkpoint records the batches acknowledged above its position; the
// attempt resuming there reads their ordinals back (AckedAbove), and a later checkpoint
// whose position covers a batch drops its record.
func TestAckedBatches(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, state.Claim{JobID: 21, Kind: "import", ListID: 1, Source: "x.csv", Owner: "a", TTL: time.Minute})
		require.NoError(t, err)
		far := []int64{1_000_001, 1_000_300, 5_000_000_000}
		require.NoError(t, s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "a", TTL: time.Minute, Position: 1000,
			Delta: state.Counts{Read: 1000, Sent: 1005}, Acked: [][]int64{{1001, 1003, 1004}, {2000, 2001}, far}}))
		got, err := s.AckedAbove(ctx, run.ID, 1000)
		require.NoError(t, err)
		require.Equal(t, []int64{1001, 1003, 1004, 2000, 2001, 1_000_001, 1_000_300, 5_000_000_000}, got)

		require.NoError(t, s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "a", TTL: time.Minute, Position: 2001,
			Delta: state.Counts{Read: 1001}}))
		got, err = s.AckedAbove(ctx, run.ID, 2001)
		require.NoError(t, err)
		require.Equal(t, far, got, "the batches the position covers are dropped")
		var n int
		require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_run_acked WHERE run_id = $1", run.ID).Scan(&n))
		require.Equal(t, 1, n)

		// Another owner cannot record anything (the checkpoint is fenced).
		err = s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "b", TTL: time.Minute, Position: 2001,
			Acked: [][]int64{{3000}}})
		require.ErrorIs(t, err, state.ErrLeaseLost)
		got, err = s.AckedAbove(ctx, run.ID, 2001)
		require.NoError(t, err)
		require.Equal(t, far, got)

		require.NoError(t, s.Finish(ctx, run.ID, "a", state.RunFailed, "gave up"))
		got, err = s.AckedAbove(ctx, run.ID, 0)
		require.NoError(t, err)
		require.Empty(t, got, "a finished run keeps no records")
	})
}

// TestLearnedListsAndAccountSettings: a list is learnt once (the first record stays), the
// learnt lists are listed in order, and an account setting is replaced by a later one.
func TestLearnedListsAndAccountSettings(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
		_, ok, err := s.ListLearned(ctx, 7)
		require.NoError(t, err)
		require.False(t, ok)
		require.NoError(t, s.MarkListLearned(ctx, 7, t0, 70))
		require.NoError(t, s.MarkListLearned(ctx, 7, t0.Add(time.Hour), 3))
		require.NoError(t, s.MarkListLearned(ctx, 3, t0, 0))
		at, ok, err := s.ListLearned(ctx, 7)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, t0, at, "the first record stays")
		lists, err := s.LearnedLists(ctx)
		require.NoError(t, err)
		require.Equal(t, []int64{3, 7}, lists)

		_, _, ok, err = s.AccountSetting(ctx, "list_param")
		require.NoError(t, err)
		require.False(t, ok)
		require.NoError(t, s.SetAccountSetting(ctx, "list_param", "subscriber_list_id"))
		require.NoError(t, s.SetAccountSetting(ctx, "list_param", "subscriber_list_id[]"))
		v, when, ok, err := s.AccountSetting(ctx, "list_param")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "subscriber_list_id[]", v)
		require.WithinDuration(t, time.Now(), when, time.Minute)
	})
}
