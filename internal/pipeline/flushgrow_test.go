package pipeline

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// pendingAtSave is a Store that notes how many fingerprints are pending when each save
// begins, then saves them with the real store.
type pendingAtSave struct {
	Store
	mu    sync.Mutex
	sizes []int
}

func (s *pendingAtSave) SaveFingerprintsStepped(ctx context.Context, f *state.FingerprintSet, between func()) error {
	s.mu.Lock()
	s.sizes = append(s.sizes, f.Pending())
	s.mu.Unlock()
	return s.Store.SaveFingerprintsStepped(ctx, f, between)
}

// TestSavesGrowWithTheList: a run saves its fingerprints every FingerprintFlush until it has
// saved eight times that, then every eighth of what it saved, never more than one and a half
// times FingerprintFlush at once; every fingerprint is saved in the end. (The merges that keep a
// bucket's parts few rewrite more the larger the list: fewer, larger saves keep their cost a
// row flat, and what the run holds bounded.)
func TestSavesGrowWithTheList(t *testing.T) {
	t.Parallel()
	db, run := testRun(t)
	store := &pendingAtSave{Store: StateStore(db)}
	const flush, unit = 100, 10
	c, fps := testCommitter(t, store, flush)
	ctx := context.Background()
	c.start(ctx)
	const units = 400
	for i := range units {
		u := unitAt(int64(i+1), unit)
		u.cp.RunID, u.cp.Owner = run.ID, "o"
		require.False(t, c.submit(ctx, u, false))
		require.NoError(t, (<-c.done).err)
	}
	c.saveEarly()
	u := unitAt(units+1, 0)
	u.cp.RunID, u.cp.Owner = run.ID, "o"
	c.submit(ctx, u, false)
	<-c.done
	require.NoError(t, c.close())

	store.mu.Lock()
	sizes := store.sizes
	store.mu.Unlock()
	saved := 0
	for i, n := range sizes[:len(sizes)-1] { // the last: what was left at the end
		want := min(max(flush, saved/8), flush+flush/2)
		require.GreaterOrEqual(t, n, want, "save %d after %d saved", i, saved)
		require.Less(t, n, want+unit, "save %d after %d saved: at most a checkpoint's fingerprints beyond", i, saved)
		saved += n
	}
	require.Greater(t, saved, 12*flush, "the saves reached one and a half times FingerprintFlush")
	require.GreaterOrEqual(t, sizes[len(sizes)-2], flush+flush/2)
	require.Zero(t, fps.Pending(), "every fingerprint saved in the end")

	loaded, err := db.LoadFingerprints(ctx, fps.ListID())
	require.NoError(t, err)
	require.Equal(t, units*unit, loaded.Len())
}
