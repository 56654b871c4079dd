package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// TestDueWriteBacks: an unmatched change is due again until it was tried as often as allowed,
// and not at all once a later change of the same person was queued for the target.
func TestDueWriteBacks(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
		_, err := s.RecordStatusChanges(ctx, []state.StatusChange{
			{Email: "ada@example.no", Status: sink.StatusUnsubscribed, ListID: 7, ChangedAt: t0},
			{Email: "bob@example.no", Status: sink.StatusBounce, ListID: 7, ChangedAt: t0},
		}, []string{"crm"})
		require.NoError(t, err)
		emails := func(wbs []state.WriteBack) []string {
			var out []string
			for _, w := range wbs {
				out = append(out, w.Change.Email)
			}
			return out
		}
		due, err := s.DueWriteBacks(ctx, "crm", 0, 2)
		require.NoError(t, err)
		require.Equal(t, []string{"ada@example.no", "bob@example.no"}, emails(due))
		require.NoError(t, s.MarkWriteBacks(ctx, nil, []int64{due[0].ID, due[1].ID}))

		due, err = s.DueWriteBacks(ctx, "crm", 0, 2)
		require.NoError(t, err)
		require.Equal(t, []string{"ada@example.no", "bob@example.no"}, emails(due), "tried once of twice: due again")
		require.Equal(t, state.WriteBackUnmatched, due[0].State)
		require.Equal(t, 1, due[0].Unmatched)

		// A later change of Ada supersedes her unmatched one.
		_, err = s.RecordStatusChanges(ctx, []state.StatusChange{
			{Email: "ada@example.no", Status: sink.StatusBounce, ListID: 7, ChangedAt: t0.Add(time.Hour)},
		}, []string{"crm"})
		require.NoError(t, err)
		due, err = s.DueWriteBacks(ctx, "crm", 0, 2)
		require.NoError(t, err)
		require.Equal(t, []string{"bob@example.no", "ada@example.no"}, emails(due))
		require.Equal(t, sink.StatusBounce, due[1].Change.Status, "Ada's later change, not the superseded one")
		require.NoError(t, s.MarkWriteBacks(ctx, []int64{due[1].ID}, []int64{due[0].ID}))

		due, err = s.DueWriteBacks(ctx, "crm", 0, 2)
		require.NoError(t, err)
		require.Empty(t, due, "Bob was tried twice; Ada's change was written")
		sums, err := s.WriteBackSummaries(ctx)
		require.NoError(t, err)
		require.Equal(t, []state.WriteBackSummary{{Target: "crm", Done: 1, Unmatched: 2}}, sums)
	})
}
