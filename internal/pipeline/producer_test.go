package pipeline

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProducerChunksInSourceOrder: the producer hands on chunks of at most chunkRows records
// in source order, mapped on several goroutines, with the rejects of invalid rows as outcomes,
// the last chunk marked eof; records at or below the start position are not rows again.
func TestProducerChunksInSourceOrder(t *testing.T) {
	t.Parallel()
	bad := func(i int) bool { return i%500 == 7 }
	cfg, _ := stubConfig(t, people(3500, bad), nil)
	cfg.DryRun = true
	e, err := New(cfg)
	require.NoError(t, err)
	out := make(chan *chunk, 8)
	go e.prod.produce(context.Background(), 1000, out)

	next := int64(1001)
	var rejected []int64
	chunks := 0
	for c := range out {
		require.NoError(t, c.err)
		chunks++
		for _, r := range c.rows {
			require.Equal(t, next, r.Ordinal, "rows in source order")
			next++
			if bad(int(next)) {
				next++ // its reject is an outcome
			}
		}
		for _, o := range c.outcomes {
			require.Equal(t, outRejected, o.kind)
			rejected = append(rejected, o.ord)
		}
		require.LessOrEqual(t, len(c.rows)+len(c.outcomes), chunkRows)
		if c.eof {
			require.Equal(t, int64(3500), c.lastRead)
			break
		}
	}
	require.Equal(t, int64(3501), next)
	require.Equal(t, []int64{1007, 1507, 2007, 2507, 3007}, rejected)
	require.GreaterOrEqual(t, chunks, 3)
}
