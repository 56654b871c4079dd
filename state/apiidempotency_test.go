package state_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestIdempotencyKeys: the first request with a key goes ahead, a second while it runs is
// told so, once finished the answer is given again; a key is per token; a key used for
// another request is refused; an abandoned key may be tried again.
func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		a, err := s.BeginIdempotent(ctx, "crm", "k1", "POST /api/v1/imports")
		require.NoError(t, err)
		require.Nil(t, a, "the first goes ahead")
		_, err = s.BeginIdempotent(ctx, "crm", "k1", "POST /api/v1/imports")
		require.ErrorIs(t, err, state.ErrIdempotencyInProgress)
		a, err = s.BeginIdempotent(ctx, "other", "k1", "POST /api/v1/imports")
		require.NoError(t, err)
		require.Nil(t, a, "keys are per token")

		want := state.IdempotentAnswer{Status: 202, Location: "/api/v1/jobs/7", ContentType: "application/json", Body: []byte(`{"job":{"id":7}}`)}
		require.NoError(t, s.FinishIdempotent(ctx, "crm", "k1", want))
		a, err = s.BeginIdempotent(ctx, "crm", "k1", "POST /api/v1/imports")
		require.NoError(t, err)
		require.Equal(t, &want, a)
		_, err = s.BeginIdempotent(ctx, "crm", "k1", "POST /api/v1/syncs/crm/runs")
		require.ErrorIs(t, err, state.ErrIdempotencyMismatch)

		_, err = s.BeginIdempotent(ctx, "crm", "k2", "POST /api/v1/forget")
		require.NoError(t, err)
		require.NoError(t, s.AbandonIdempotent(ctx, "crm", "k2"))
		a, err = s.BeginIdempotent(ctx, "crm", "k2", "POST /api/v1/forget")
		require.NoError(t, err)
		require.Nil(t, a, "abandoned: tried again")
	})
}

// TestIdempotencyKeyRace: of two requests with one key at once, one goes ahead and the other
// is told the first is under way.
func TestIdempotencyKeyRace(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		for round := range 5 {
			key := fmt.Sprintf("race-%d", round)
			errs := make(chan error, 2)
			firsts := make(chan bool, 2)
			for range 2 {
				go func() {
					a, err := s.BeginIdempotent(ctx, "crm", key, "POST /api/v1/imports")
					firsts <- err == nil && a == nil
					errs <- err
				}()
			}
			went, inProgress := 0, 0
			for range 2 {
				if <-firsts {
					went++
				}
				if errors.Is(<-errs, state.ErrIdempotencyInProgress) {
					inProgress++
				}
			}
			require.Equal(t, 1, went, "one goes ahead")
			require.Equal(t, 1, inProgress, "the other is told it is under way")
		}
	})
}
