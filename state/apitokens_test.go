package state_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestAPITokens: a token is shown once and kept as its hash only; it finds its name until
// revoked; a name in use is refused, a revoked one may be used again; read-only is kept.
func TestAPITokens(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		tok, err := s.CreateAPIToken(ctx, "crm", false)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(tok, state.TokenPrefix))
		require.Greater(t, len(tok), len(state.TokenPrefix)+40)
		ro, err := s.CreateAPIToken(ctx, "dashboard", true)
		require.NoError(t, err)
		require.NotEqual(t, tok, ro)

		_, err = s.CreateAPIToken(ctx, "crm", false)
		require.ErrorIs(t, err, state.ErrTokenExists)
		_, err = s.CreateAPIToken(ctx, "has space", false)
		require.ErrorIs(t, err, state.ErrBadTokenName)

		var stored string
		require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT token_hash FROM subsync_api_token WHERE name = 'crm'`).Scan(&stored))
		require.Equal(t, state.TokenHash(tok), stored)
		require.NotContains(t, stored, tok)

		got, err := s.UseAPIToken(ctx, tok)
		require.NoError(t, err)
		require.Equal(t, "crm", got.Name)
		require.False(t, got.ReadOnly)
		got, err = s.UseAPIToken(ctx, ro)
		require.NoError(t, err)
		require.True(t, got.ReadOnly)
		_, err = s.UseAPIToken(ctx, tok+"x")
		require.ErrorIs(t, err, state.ErrNotFound)

		require.NoError(t, s.RevokeAPIToken(ctx, "crm"))
		_, err = s.UseAPIToken(ctx, tok)
		require.ErrorIs(t, err, state.ErrNotFound, "revoked")
		require.ErrorIs(t, s.RevokeAPIToken(ctx, "crm"), state.ErrNotFound)

		list, err := s.APITokens(ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "crm", list[0].Name)
		require.False(t, list[0].RevokedAt.IsZero())
		require.False(t, list[0].LastUsed.IsZero())
		require.True(t, list[1].ReadOnly)

		again, err := s.CreateAPIToken(ctx, "crm", false)
		require.NoError(t, err, "a revoked token's name may be used again")
		got, err = s.UseAPIToken(ctx, again)
		require.NoError(t, err)
		require.Equal(t, "crm", got.Name)
	})
}

// TestAPITokenUseWrittenOncePerMinute: a client polling with a token does not write its last
// use on every call (SQLite has one writer, which the runs' checkpoints need).
func TestAPITokenUseWrittenOncePerMinute(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		tok, err := s.CreateAPIToken(ctx, "poller", true)
		require.NoError(t, err)
		lastUsed := func() int64 {
			var v int64
			require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT last_used_at FROM subsync_api_token WHERE name = 'poller'`).Scan(&v))
			return v
		}
		_, err = s.UseAPIToken(ctx, tok)
		require.NoError(t, err)
		first := lastUsed()
		require.NotZero(t, first)
		for range 3 {
			_, err = s.UseAPIToken(ctx, tok)
			require.NoError(t, err)
		}
		require.Equal(t, first, lastUsed(), "not written again within the minute")
	})
}
