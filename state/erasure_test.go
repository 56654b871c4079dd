package state_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestErasedSet: an erased address (any case) is erased in every list's suppression set, and
// no other; a fleet's stores share one key; a key that no longer fits the stored hashes stops
// the load rather than letting the erased back.
func TestErasedSet(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		set, err := s.LoadSuppressions(ctx, 7)
		require.NoError(t, err)
		require.False(t, set.Erased(state.EmailHash("ola@example.com")))
		v := set.Version()

		_, err = s.Erase(ctx, " Ola@Example.com ")
		require.NoError(t, err)
		other := state.New(s.DB(), s.Dialect()) // another worker of the fleet
		for _, st := range []*state.Store{s, other} {
			for _, list := range []int64{7, 8} {
				set, err := st.LoadSuppressions(ctx, list)
				require.NoError(t, err)
				require.Greater(t, set.Version(), v, "runs under way reload the set")
				require.True(t, set.Erased(state.EmailHash("ola@example.com")))
				require.False(t, set.Erased(state.EmailHash("kari@example.com")))
			}
			erased, err := st.IsErased(ctx, "OLA@example.com")
			require.NoError(t, err)
			require.True(t, erased)
		}

		_, err = s.DB().ExecContext(ctx, "UPDATE subsync_erasure_key SET secret = $1", make([]byte, 32))
		require.NoError(t, err)
		_, err = state.New(s.DB(), s.Dialect()).LoadSuppressions(ctx, 7)
		require.ErrorContains(t, err, "does not fit the erasure key")
	})
}
