package state_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestUploads: an upload waits for its import until it expires; one import claims it (a
// second is refused), and the claimed file stays, the job's; an upload nobody imported is
// deleted once expired.
func TestUploads(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		f, err := s.StageFile(ctx, "medlemmer.csv", strings.NewReader("E-post\na@example.com\n"))
		require.NoError(t, err)
		_, err = s.PendingUpload(ctx, f.ID)
		require.ErrorIs(t, err, state.ErrNotFound, "a staged file is not an upload until marked")
		require.NoError(t, s.MarkUpload(ctx, f.ID, time.Hour))
		got, err := s.PendingUpload(ctx, f.ID)
		require.NoError(t, err)
		require.Equal(t, "medlemmer.csv", got.Name)

		stale, err := s.StageFile(ctx, "gammel.csv", strings.NewReader("E-post\nb@example.com\n"))
		require.NoError(t, err)
		require.NoError(t, s.MarkUpload(ctx, stale.ID, -time.Second))
		_, err = s.PendingUpload(ctx, stale.ID)
		require.ErrorIs(t, err, state.ErrNotFound, "expired")

		claimed, err := s.ClaimUpload(ctx, f.ID)
		require.NoError(t, err)
		require.Equal(t, f.ID, claimed.ID)
		_, err = s.ClaimUpload(ctx, f.ID)
		require.ErrorIs(t, err, state.ErrNotFound, "one upload, one import")

		n, err := s.DeleteExpiredUploads(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, err = s.StagedFileInfo(ctx, stale.ID)
		require.ErrorIs(t, err, state.ErrNotFound)
		_, err = s.StagedFileInfo(ctx, f.ID)
		require.NoError(t, err, "the claimed file is the job's")
	})
}
