package state_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestCheckpointAllOrNothing: a checkpoint writes everything it carries (the run's position
// and counts, its rejects, warnings, roster members and acknowledged batches) or nothing: an
// owner that lost the lease writes nothing, and on Postgres, where a checkpoint's statements
// go to the server together, a statement that fails after the run's row leaves that row as
// it was.
func TestCheckpointAllOrNothing(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, state.Claim{JobID: 5, Kind: state.KindSync, Name: "crm", ListID: 7, Owner: "a", TTL: time.Minute})
		require.NoError(t, err)
		full := func(owner string, pos int64, reason string) state.Checkpoint {
			return state.Checkpoint{RunID: run.ID, Owner: owner, TTL: time.Minute, Position: pos, BytesDone: pos * 10,
				Delta:    state.Counts{Read: 100, Sent: 98, Rejected: 1, Batches: 1, Requests: 1},
				Rejects:  []state.Reject{{Ordinal: pos - 50, Line: int(pos) - 49, Code: "invalid_email", Reason: reason}},
				Warnings: []state.Reject{{Ordinal: pos - 40, Line: int(pos) - 39, Code: "dropped", Reason: "a value dropped"}},
				Roster: &state.RosterChange{Sync: "crm", ListID: 7, Add: []state.Member{
					{Email: "p" + reason + "@example.com", Key: "K" + reason}}},
				Acked: [][]int64{{pos + 101, pos + 102}}}
		}
		require.NoError(t, s.Checkpoint(ctx, full("a", 100, "1")))
		written := func(pos int64, reads, rejects, warnings, members int, acked []int64) {
			t.Helper()
			got, err := s.Run(ctx, run.ID)
			require.NoError(t, err)
			require.Equal(t, pos, got.Position)
			require.Equal(t, int64(reads), got.Counts.Read)
			require.Equal(t, rejects, countRejects(t, s, run.ID))
			n := 0
			require.NoError(t, s.Warnings(ctx, run.ID, func(state.Reject) error { n++; return nil }))
			require.Equal(t, warnings, n)
			r, err := s.LoadRoster(ctx, "crm", 7)
			require.NoError(t, err)
			require.Equal(t, members, r.Len())
			got2, err := s.AckedAbove(ctx, run.ID, pos)
			require.NoError(t, err)
			require.Equal(t, acked, got2)
		}
		written(100, 100, 1, 1, 1, []int64{201, 202})

		// Another owner's checkpoint writes nothing.
		require.ErrorIs(t, s.Checkpoint(ctx, full("b", 200, "2")), state.ErrLeaseLost)
		written(100, 100, 1, 1, 1, []int64{201, 202})

		if s.Dialect() == state.Postgres {
			// Postgres refuses a NUL in text: the reject fails after the run's row was updated.
			err := s.Checkpoint(ctx, full("a", 200, "bad\x00reason"))
			require.Error(t, err)
			require.NotErrorIs(t, err, state.ErrLeaseLost)
			written(100, 100, 1, 1, 1, []int64{201, 202})
		}

		require.NoError(t, s.Checkpoint(ctx, full("a", 300, "3")))
		written(300, 200, 2, 2, 2, []int64{401, 402})
	})
}

// TestCheckpointManyRecords: a checkpoint whose records take several statements (more
// rejects and roster members than one statement carries) writes them all, each as given.
func TestCheckpointManyRecords(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, state.Claim{JobID: 6, Kind: state.KindSync, Name: "big", ListID: 8, Owner: "a", TTL: time.Minute})
		require.NoError(t, err)
		const n = 2500
		cp := state.Checkpoint{RunID: run.ID, Owner: "a", TTL: time.Minute, Position: 2 * n,
			Delta: state.Counts{Read: 2 * n, Sent: n, Rejected: n}, Roster: &state.RosterChange{Sync: "big", ListID: 8}}
		for i := range n {
			cp.Rejects = append(cp.Rejects, state.Reject{Ordinal: int64(2*i + 1), Line: 2*i + 2, Code: "invalid_email",
				Reason: fmt.Sprintf("reason %d", i)})
			cp.Roster.Add = append(cp.Roster.Add, state.Member{Email: fmt.Sprintf("m%d@example.com", i), Key: fmt.Sprintf("K%d", i)})
		}
		require.NoError(t, s.Checkpoint(ctx, cp))
		var got []state.Reject
		require.NoError(t, s.Rejects(ctx, run.ID, func(r state.Reject) error { got = append(got, r); return nil }))
		require.Equal(t, cp.Rejects, got)
		r, err := s.LoadRoster(ctx, "big", 8)
		require.NoError(t, err)
		require.Equal(t, n, r.Len())
		for i := range n {
			k, ok := r.Member(state.EmailHash(fmt.Sprintf("m%d@example.com", i)))
			require.True(t, ok)
			require.Equal(t, state.KeyHash(fmt.Sprintf("K%d", i)), k)
		}
	})
}
