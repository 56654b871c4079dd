package mapping

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/spillset"
	"github.com/subsync/subsync/sink"
)

// TestBoundedDeduperDecidesAsUnbounded: a Deduper bounded to the smallest budget spills its
// hashes many times over and decides every row as an unbounded one does, by each policy:
// what is sent, what is rejected, what is counted; its memory stays within the budget, and
// its temporary folder holds nothing at any time.
func TestBoundedDeduperDecidesAsUnbounded(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	rows := make([]Row, 150_000)
	for i := range rows {
		// Repeats near and far: an address among 100,000, drawn anew for each row.
		rows[i] = Row{Ordinal: int64(i + 1), Line: i + 2, Sub: sink.Subscriber{Email: fmt.Sprintf("p%d@example.com", rng.IntN(100_000))}}
	}
	for _, policy := range []string{DuplicatesLast, DuplicatesFirst, DuplicatesReject} {
		dir := t.TempDir()
		ref, d := NewDeduper(policy), NewDeduper(policy).Bound(spillset.MinBudget, dir)
		for _, r := range rows {
			wantSend, wantRej := ref.Check(r)
			send, rej := d.Check(r)
			require.NoError(t, d.Err())
			require.Equal(t, wantSend, send, "policy %s: row %d sent", policy, r.Ordinal)
			require.Equal(t, wantRej, rej, "policy %s: row %d rejected", policy, r.Ordinal)
		}
		require.Equal(t, ref.Duplicates(), d.Duplicates())
		require.Equal(t, ref.Len(), d.Len())
		st := d.Stats()
		require.Greater(t, st.Spills, 50, "policy %s: it spilled", policy)
		require.Positive(t, st.Found, "policy %s: repeats of spilled addresses", policy)
		require.LessOrEqual(t, st.PeakBytes, int64(spillset.MinBudget), "policy %s: memory", policy)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries)
		require.NoError(t, d.Close())
		require.Equal(t, ref.Duplicates(), d.Duplicates(), "counts stay after Close")
	}
}
