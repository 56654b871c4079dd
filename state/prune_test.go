package state_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// TestPrune: a dry run counts what would go and deletes nothing; a prune deletes the rejects,
// warnings and removals of runs past the rejects period (the runs keep their counts and say
// when), whole runs past the runs period, status changes past the status log period unless a
// write-back of theirs is pending; the suppression list, the keyed hashes of erased people
// and runs not yet finished stay.
func TestPrune(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		db := s.DB()
		// finished makes a finished run of job jobID with a reject, a warning and a removal,
		// which finished age ago.
		finished := func(jobID int64, age time.Duration) state.Run {
			t.Helper()
			run, err := s.ClaimRun(ctx, claim(jobID, "o", time.Minute))
			require.NoError(t, err)
			require.NoError(t, s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "o", TTL: time.Minute, Position: 2,
				Delta:    state.Counts{Read: 2, Rejected: 1, Sent: 1},
				Rejects:  []state.Reject{{Ordinal: 1, Line: 2, Code: "invalid_email", Reason: "r", Row: state.EncodeRow([]string{"x-at-example.no", "Kari"})}},
				Warnings: []state.Reject{{Ordinal: 2, Line: 3, Column: "Mobil", Code: "invalid_phone", Reason: "p", Row: state.EncodeRow([]string{"ola@example.no", "12"})}}}))
			_, err = db.ExecContext(ctx, "INSERT INTO subsync_removal (run_id, email) VALUES ($1, $2)", run.ID,
				fmt.Sprintf("gone%d@example.no", jobID))
			require.NoError(t, err)
			require.NoError(t, s.Finish(ctx, run.ID, "o", state.RunCompleted, ""))
			_, err = db.ExecContext(ctx, "UPDATE subsync_run SET finished_at = $1 WHERE id = $2", now.Add(-age).UnixMicro(), run.ID)
			require.NoError(t, err)
			return run
		}
		ancient := finished(1, 400*24*time.Hour) // past the runs period: goes whole
		old := finished(2, 100*24*time.Hour)     // past the rejects period: its rejects go
		recent := finished(3, 10*24*time.Hour)   // kept whole
		running, err := s.ClaimRun(ctx, claim(4, "o", time.Minute))
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "UPDATE subsync_run SET started_at = $1 WHERE id = $2", now.Add(-500*24*time.Hour).UnixMicro(), running.ID)
		require.NoError(t, err)

		// The status log: an old change written back, an old one still pending, a recent one.
		_, err = s.RecordStatusChanges(ctx, []state.StatusChange{
			{Email: "done@example.no", Status: sink.StatusUnsubscribed, ListID: 7, ChangedAt: now.Add(-400 * 24 * time.Hour)},
			{Email: "pending@example.no", Status: sink.StatusBounce, ListID: 7, ChangedAt: now.Add(-400 * 24 * time.Hour)},
			{Email: "new@example.no", Status: sink.StatusBounce, ListID: 7, ChangedAt: now.Add(-time.Hour)},
		}, []string{"crm"})
		require.NoError(t, err)
		due, err := s.DueWriteBacks(ctx, "crm", 0, 1)
		require.NoError(t, err)
		require.Equal(t, "done@example.no", due[0].Change.Email)
		require.NoError(t, s.MarkWriteBacks(ctx, []int64{due[0].ID}, nil))
		// An erased person, long ago.
		_, err = s.MarkErased(ctx, []string{"erased@example.no"})
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "UPDATE subsync_erased SET erased_at = $1", now.Add(-900*24*time.Hour).UnixMicro())
		require.NoError(t, err)

		policy := state.PrunePolicy{Rejects: 90 * 24 * time.Hour, Runs: 365 * 24 * time.Hour, StatusLog: 365 * 24 * time.Hour}
		count := func(table string) int {
			var n int
			require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n))
			return n
		}
		tables := []string{"subsync_run", "subsync_reject", "subsync_warning", "subsync_removal", "subsync_status_change",
			"subsync_writeback", "subsync_suppression", "subsync_erased"}
		counts := func() map[string]int {
			m := map[string]int{}
			for _, tb := range tables {
				m[tb] = count(tb)
			}
			return m
		}
		before := counts()

		dry, err := s.Prune(ctx, policy, now, true)
		require.NoError(t, err)
		require.Equal(t, before, counts(), "a dry run deletes nothing")
		require.Len(t, dry.Runs, 2)
		require.Equal(t, ancient.ID, dry.Runs[0].ID)
		require.True(t, dry.Runs[0].Whole)
		require.Equal(t, old.ID, dry.Runs[1].ID)
		require.False(t, dry.Runs[1].Whole)
		require.Equal(t, state.PrunedRun{ID: old.ID, Kind: state.KindImport, Name: "contacts.csv", FinishedAt: dry.Runs[1].FinishedAt,
			Rejects: 1, Warnings: 1, Removals: 1}, dry.Runs[1])
		require.Equal(t, int64(2), dry.Rejects)
		require.Equal(t, int64(1), dry.WholeRuns)
		require.Equal(t, int64(1), dry.StatusChanges, "the pending change stays")
		require.Equal(t, int64(1), dry.WriteBacks)

		done, err := s.Prune(ctx, policy, now, false)
		require.NoError(t, err)
		dry.Runs, done.Runs = nil, nil
		require.Equal(t, dry, done, "a prune deletes what its dry run said")
		after := counts()
		require.Equal(t, map[string]int{"subsync_run": 3, "subsync_reject": 1, "subsync_warning": 1, "subsync_removal": 1,
			"subsync_status_change": 2, "subsync_writeback": 2, "subsync_suppression": before["subsync_suppression"],
			"subsync_erased": 1}, after)
		_, err = s.Run(ctx, ancient.ID)
		require.ErrorIs(t, err, state.ErrNotFound, "the run past the runs period is gone")
		got, err := s.Run(ctx, old.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), got.Counts.Rejected, "the counts stay")
		require.WithinDuration(t, now, got.RejectsPrunedAt, time.Second, "the run says when its rejects went")
		got, err = s.Run(ctx, recent.ID)
		require.NoError(t, err)
		require.True(t, got.RejectsPrunedAt.IsZero())
		erased, err := s.IsErased(ctx, "erased@example.no")
		require.NoError(t, err)
		require.True(t, erased, "an erased person stays erased")

		again, err := s.Prune(ctx, policy, now, false)
		require.NoError(t, err)
		require.Empty(t, again.Runs, "nothing is pruned twice")
		require.Zero(t, again.StatusChanges)
	})
}
