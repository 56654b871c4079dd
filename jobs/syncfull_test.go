package jobs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
)

// TestSyncFullNotFoldedIntoDelta: a full sync asked for while a delta run of the same sync is
// queued is not silently folded into it (that run will not send unchanged rows); a delta
// asked for while a full run is queued is folded into it.
func TestSyncFullNotFoldedIntoDelta(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		path := contacts(t, t.TempDir(), 10, nil)
		b.cfg.Syncs = []jobs.SyncSpec{
			{Name: "delta", ListID: b.listID, Source: sources.Config{Path: path}},
			{Name: "full", ListID: b.listID, Source: sources.Config{Path: path}},
		}
		rt := b.open(t)

		id, err := rt.EnqueueSync(ctx, "delta", false)
		require.NoError(t, err)
		again, err := rt.EnqueueSync(ctx, "delta", true)
		var nf *jobs.FullNotQueuedError
		require.ErrorAs(t, err, &nf)
		require.ErrorIs(t, err, jobs.ErrAlreadyQueued)
		require.Equal(t, id, again)
		require.Equal(t, id, nf.JobID)
		require.Contains(t, err.Error(), "--full was not queued")

		id, err = rt.EnqueueSync(ctx, "full", true)
		require.NoError(t, err)
		for _, full := range []bool{false, true} {
			again, err = rt.EnqueueSync(ctx, "full", full)
			require.ErrorIs(t, err, jobs.ErrAlreadyQueued)
			require.False(t, isFullNotQueued(err), "a request a queued full run covers is folded into it")
			require.Equal(t, id, again)
		}
	})
}

func isFullNotQueued(err error) bool {
	var nf *jobs.FullNotQueuedError
	return errors.As(err, &nf)
}
