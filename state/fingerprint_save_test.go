package state_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestFingerprintStepsMergeParts: saves in steps, as a run makes them every FingerprintFlush
// rows, add a part to each bucket they touch until a bucket has eight, and the save after
// merges its parts into one; every fingerprint saved loads back with its latest payload. (On
// Postgres a step's inserts go to the server together, and a step that merges parts is a
// transaction of its own.)
func TestFingerprintStepsMergeParts(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		maxParts := func() int {
			var n int
			require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT COALESCE(MAX(c), 0) FROM
    (SELECT COUNT(*) AS c FROM subsync_fingerprint WHERE list_id = 5 GROUP BY bucket) AS per_bucket`).Scan(&n))
			return n
		}
		rows := func() int {
			var n int
			require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_fingerprint WHERE list_id = 5").Scan(&n))
			return n
		}
		want := map[uint64]uint64{}
		set := state.NewFingerprintSet(5)
		merged := false
		for save := range 10 {
			for i := range 25_000 {
				e := state.EmailHash(fmt.Sprintf("m%d@example.com", (save*25_000+i)%200_000))
				set.Add(state.Fingerprint{Email: e, Payload: uint64(save + 1)})
				want[e] = uint64(save + 1)
			}
			steps, before := 0, rows()
			require.NoError(t, s.SaveFingerprintsStepped(ctx, set, func() { steps++ }))
			require.Equal(t, 16, steps, "save %d", save)
			require.LessOrEqual(t, maxParts(), 8, "save %d: a bucket has at most 8 parts", save)
			n := rows()
			merged = merged || n < before
		}
		require.True(t, merged, "the parts were never merged")
		got, err := s.LoadFingerprints(ctx, 5)
		require.NoError(t, err)
		require.Equal(t, len(want), got.Len())
		for e, p := range want {
			v, ok := lookup(got, e)
			require.True(t, ok, "an e-mail lost")
			require.Equal(t, p, v, "a stale payload")
		}
	})
}
