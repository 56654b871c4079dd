package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestRoster: a checkpoint records who a sync delivered, with their key; a key that comes
// with a new address marks the old one moved; a removal is fenced by the run's lease and
// takes the addresses out of the roster.
func TestRoster(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, state.Claim{JobID: 1, Kind: state.KindSync, Name: "crm", ListID: 7, Owner: "a", TTL: time.Minute})
		require.NoError(t, err)
		cp := func(add ...state.Member) {
			t.Helper()
			require.NoError(t, s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "a", TTL: time.Minute,
				Roster: &state.RosterChange{Sync: "crm", ListID: 7, Add: add}}))
		}
		cp(state.Member{Email: "a@example.com", Key: "K1"}, state.Member{Email: "b@example.com", Key: "K2"},
			state.Member{Email: "c@example.com"})
		r, err := s.LoadRoster(ctx, "crm", 7)
		require.NoError(t, err)
		require.Equal(t, 3, r.Len())
		k, ok := r.Member(state.EmailHash("A@example.com "))
		require.True(t, ok)
		require.Equal(t, state.KeyHash("K1"), k)
		e, ok := r.ByKey(state.KeyHash(" K2"))
		require.True(t, ok)
		require.Equal(t, state.EmailHash("b@example.com"), e)
		other, err := s.LoadRoster(ctx, "other", 7)
		require.NoError(t, err)
		require.Zero(t, other.Len(), "a roster is the sync's own")

		// K1 moves to a2@.
		cp(state.Member{Email: "a2@example.com", Key: "K1", Moved: true})
		moved := map[string]bool{}
		require.NoError(t, s.ScanRoster(ctx, "crm", 7, func(row state.RosterRow) error {
			moved[row.Address] = row.Moved
			return nil
		}))
		require.Equal(t, map[string]bool{"a@example.com": true, "a2@example.com": false, "b@example.com": false,
			"c@example.com": false}, moved)
		r, err = s.LoadRoster(ctx, "crm", 7)
		require.NoError(t, err)
		e, _ = r.ByKey(state.KeyHash("K1"))
		require.Equal(t, state.EmailHash("a2@example.com"), e)

		// A removal by an owner that lost the lease writes nothing.
		rem := state.Removal{RunID: run.ID, Owner: "b", TTL: time.Minute, Sync: "crm", ListID: 7,
			Removed: []string{"c@example.com"}, Dropped: []string{"a@example.com"}, Requests: 1}
		require.ErrorIs(t, s.RecordRemoval(ctx, rem), state.ErrLeaseLost)
		rem.Owner = "a"
		require.NoError(t, s.RecordRemoval(ctx, rem))
		got, err := s.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), got.Counts.Removed)
		require.Equal(t, int64(1), got.Counts.Requests)
		left := 0
		require.NoError(t, s.ScanRoster(ctx, "crm", 7, func(state.RosterRow) error { left++; return nil }))
		require.Equal(t, 2, left)
	})
}

// TestRemovedNamed: a removal records whom it unsubscribed and why (left the source, or the
// old address of a key that moved, with the new one), in order, a page at a time; an erasure
// deletes a person from those lists, as the old address and as the new one.
func TestRemovedNamed(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, state.Claim{JobID: 1, Kind: state.KindSync, Name: "crm", ListID: 7, Owner: "a", TTL: time.Minute})
		require.NoError(t, err)
		cp := func(add ...state.Member) {
			t.Helper()
			require.NoError(t, s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "a", TTL: time.Minute,
				Roster: &state.RosterChange{Sync: "crm", ListID: 7, Add: add}}))
		}
		cp(state.Member{Email: "a@example.com", Key: "K1"}, state.Member{Email: "b@example.com", Key: "K2"},
			state.Member{Email: "c@example.com"}, state.Member{Email: "d@example.com", Key: "K4"})
		cp(state.Member{Email: "a2@example.com", Key: "K1", Moved: true})
		require.NoError(t, s.RecordRemoval(ctx, state.Removal{RunID: run.ID, Owner: "a", TTL: time.Minute, Sync: "crm", ListID: 7,
			Removed: []string{"c@example.com", "A@example.com"}}))
		require.NoError(t, s.RecordRemoval(ctx, state.Removal{RunID: run.ID, Owner: "a", TTL: time.Minute, Sync: "crm", ListID: 7,
			Removed: []string{"d@example.com"}}))

		all, err := s.RemovedPage(ctx, run.ID, 0, 10)
		require.NoError(t, err)
		require.Len(t, all, 3)
		strip := func(rs []state.Removed) []state.Removed {
			for i := range rs {
				rs[i].ID = 0
			}
			return rs
		}
		page, err := s.RemovedPage(ctx, run.ID, 0, 2)
		require.NoError(t, err)
		rest, err := s.RemovedPage(ctx, run.ID, page[1].ID, 2)
		require.NoError(t, err)
		require.Equal(t, []state.Removed{{Email: "a@example.com", Moved: true, NewEmail: "a2@example.com"},
			{Email: "c@example.com"}, {Email: "d@example.com"}}, strip(append(page, rest...)))
		counts, err := s.CountRemoved(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, state.RemovalCounts{Left: 2, Moved: 1}, counts)

		_, err = s.Erase(ctx, "a2@example.com")
		require.NoError(t, err)
		_, err = s.Erase(ctx, "c@example.com")
		require.NoError(t, err)
		left, err := s.RemovedPage(ctx, run.ID, 0, 10)
		require.NoError(t, err)
		require.Equal(t, []state.Removed{{Email: "d@example.com"}}, strip(left))
	})
}
