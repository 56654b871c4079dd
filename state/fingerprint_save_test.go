package state_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
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

// argBytes notes the largest data (the byte slices among its arguments) of a statement a pgx
// connection sends, alone or in a batch.
type argBytes struct{ max atomic.Int64 }

func (a *argBytes) note(args []any) {
	n := 0
	for _, v := range args {
		if b, ok := v.([]byte); ok {
			n += len(b)
		}
	}
	for {
		m := a.max.Load()
		if int64(n) <= m || a.max.CompareAndSwap(m, int64(n)) {
			return
		}
	}
}

func (a *argBytes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	a.note(d.Args)
	return ctx
}
func (a *argBytes) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (a *argBytes) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (a *argBytes) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	a.note(d.Args)
}
func (a *argBytes) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestFingerprintStatementsBounded: a save's statements carry at most about maxInsertBytes of
// fingerprints, merges of a bucket's parts included, however large the list: a step of 256
// buckets wrote them 64 parts a statement, 3.7 MB each for a ten-million-row list, which the
// driver copied twice more to send. Not parallel: it lowers the bound for the package.
func TestFingerprintStatementsBounded(t *testing.T) {
	defer state.SetMaxInsertBytes(8 << 10)()
	u, _ := testdb.PostgresSchema(t)
	cfg, err := pgx.ParseConfig(u)
	require.NoError(t, err)
	trace := &argBytes{}
	cfg.Tracer = trace
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	ctx := context.Background()
	_, err = state.Migrate(ctx, db, state.Postgres)
	require.NoError(t, err)
	s := state.New(db, state.Postgres)
	set, want := state.NewFingerprintSet(5), map[uint64]uint64{}
	for save := range 10 { // parts merged: see TestFingerprintStepsMergeParts
		for i := range 40_000 {
			e := state.EmailHash(fmt.Sprintf("b%d@example.com", (save*40_000+i)%400_000))
			set.Add(state.Fingerprint{Email: e, Payload: uint64(save + 1)})
			want[e] = uint64(save + 1)
		}
		require.NoError(t, s.SaveFingerprintsStepped(ctx, set, func() {}))
	}
	// A statement ends once its data reaches the bound: it may pass it by one part (a bucket
	// of this list, 400,000 fingerprints: about 2.3 KB).
	require.LessOrEqual(t, trace.max.Load(), int64(8<<10+4<<10), "the largest statement's data")
	got, err := s.LoadFingerprints(ctx, 5)
	require.NoError(t, err)
	require.Equal(t, len(want), got.Len())
	for e, p := range want {
		v, ok := lookup(got, e)
		require.True(t, ok, "an e-mail lost")
		require.Equal(t, p, v, "a stale payload")
	}
}
