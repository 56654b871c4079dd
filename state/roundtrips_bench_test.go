package state_test

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/state"
)

// roundTrips counts what a pgx connection sends to the server: each statement sent alone
// (BEGIN and COMMIT included) and each batch of statements sent together. A batch whose
// statements are prepared already costs one round trip, as a statement alone does. It also
// notes the largest data (the byte slices among its arguments) of a statement, alone or in a
// batch.
type roundTrips struct{ n, maxBytes atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	r.noteArgs(d.Args)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.noteArgs(d.Args)
}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (r *roundTrips) noteArgs(args []any) {
	n := int64(0)
	for _, v := range args {
		if b, ok := v.([]byte); ok {
			n += int64(len(b))
		}
	}
	for {
		m := r.maxBytes.Load()
		if n <= m || r.maxBytes.CompareAndSwap(m, n) {
			return
		}
	}
}

// newTracedPostgres returns a store on a fresh Postgres schema whose connections report to
// the tracer returned.
func newTracedPostgres(tb testing.TB) (*state.Store, *roundTrips) {
	tb.Helper()
	u, _ := testdb.PostgresSchema(tb)
	cfg, err := pgx.ParseConfig(u)
	require.NoError(tb, err)
	rt := &roundTrips{}
	cfg.Tracer = rt
	db := stdlib.OpenDB(*cfg)
	tb.Cleanup(func() { _ = db.Close() })
	_, err = state.Migrate(context.Background(), db, state.Postgres)
	require.NoError(tb, err)
	return state.New(db, state.Postgres), rt
}

// BenchmarkCheckpoint writes a run's checkpoints as an import of 1000-row batches does, four
// in flight: every checkpoint passes a batch, and every other one also records a batch
// acknowledged above the position (answered before the batch sent ahead of it). It reports
// the time per checkpoint and, on Postgres, the round trips to the server per checkpoint
// (round-trips/op): a run's batches wait for their checkpoint before their slot of the window
// is free, so on a server they wait for every round trip in it.
//
//	go test ./state -run '^$' -bench BenchmarkCheckpoint -benchtime 2000x
func BenchmarkCheckpoint(b *testing.B) {
	eachBenchDB(b, benchCheckpoints)
}

// eachBenchDB runs fn on a fresh SQLite file and on a fresh Postgres schema whose
// connections count their round trips.
func eachBenchDB(b *testing.B, fn func(b *testing.B, s *state.Store, rt *roundTrips)) {
	b.Run("sqlite", func(b *testing.B) {
		db, err := state.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "subsync.db"))
		require.NoError(b, err)
		defer db.Close()
		_, err = state.Migrate(context.Background(), db, state.SQLite)
		require.NoError(b, err)
		fn(b, state.New(db, state.SQLite), nil)
	})
	b.Run("postgres", func(b *testing.B) {
		s, rt := newTracedPostgres(b)
		fn(b, s, rt)
	})
}

func benchCheckpoints(b *testing.B, s *state.Store, rt *roundTrips) {
	ctx := context.Background()
	run, err := s.ClaimRun(ctx, claim(1, "o", time.Minute))
	require.NoError(b, err)
	const rows = 1000
	pos := int64(0)
	checkpoint := func(i int) state.Checkpoint {
		cp := state.Checkpoint{RunID: run.ID, Owner: "o", TTL: time.Minute, Position: pos + rows, BytesDone: (pos + rows) * 60,
			Delta: state.Counts{Read: rows, Sent: rows, Batches: 1, Requests: 1}}
		if i%2 == 1 { // the batch after the next one, acknowledged first
			ords := make([]int64, rows)
			for k := range ords {
				ords[k] = pos + 2*rows + 1 + int64(k)
			}
			cp.Acked = [][]int64{ords}
		}
		pos += rows
		return cp
	}
	require.NoError(b, s.Checkpoint(ctx, checkpoint(1))) // statements prepared
	var before int64
	if rt != nil {
		before = rt.n.Load()
	}
	n := 0
	for b.Loop() {
		require.NoError(b, s.Checkpoint(ctx, checkpoint(n)))
		n++
	}
	if rt != nil {
		b.ReportMetric(float64(rt.n.Load()-before)/float64(n), "round-trips/op")
	}
	got, err := s.Run(ctx, run.ID)
	require.NoError(b, err)
	require.Equal(b, pos, got.Position)
	require.Equal(b, pos, got.Counts.Sent)
}

// BenchmarkFingerprintSaveSteps saves 250,000 fingerprints (jobs.FingerprintFlushDefault) in
// steps, as a run does every FingerprintFlush rows: the run's checkpoints wait for the step
// under way. It reports the time per step (ms/step) and, on Postgres, the round trips per step
// (round-trips/step).
//
//	go test ./state -run '^$' -bench BenchmarkFingerprintSaveSteps -benchtime 5x
func BenchmarkFingerprintSaveSteps(b *testing.B) {
	eachBenchDB(b, func(b *testing.B, s *state.Store, rt *roundTrips) {
		ctx := context.Background()
		const n = 250_000
		emails := make([]uint64, n)
		for i := range emails {
			emails[i] = state.EmailHash("p" + strconv.Itoa(i) + "@example.com")
		}
		steps, trips := 0, int64(0)
		var took time.Duration
		for b.Loop() {
			set := state.NewFingerprintSet(1)
			for i, e := range emails {
				set.Add(state.Fingerprint{Email: e, Payload: uint64(i)})
			}
			var before int64
			if rt != nil {
				before = rt.n.Load()
			}
			start := time.Now()
			require.NoError(b, s.SaveFingerprintsStepped(ctx, set, func() { steps++ }))
			took += time.Since(start)
			if rt != nil {
				trips += rt.n.Load() - before
			}
			require.NoError(b, s.ForgetFingerprints(ctx, 1))
		}
		b.ReportMetric(float64(took.Microseconds())/1000/float64(steps), "ms/step")
		if rt != nil {
			b.ReportMetric(float64(trips)/float64(steps), "round-trips/step")
		}
	})
}
