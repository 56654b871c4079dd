package pipeline

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// TestCommitterCountsAcknowledgedBatchesWhole: an acknowledged batch is counted whole by the
// next checkpoint (a refused row as a reject), its rows above the checkpoint recorded as
// acknowledged, and the batch handed back (its slot freed) at once; the outcomes of the rows
// not sent are counted with the checkpoint that covers them.
func TestCommitterCountsAcknowledgedBatchesWhole(t *testing.T) {
	t.Parallel()
	cfg, store := stubConfig(t, people(1, nil), &ackSender{})
	e, err := New(cfg)
	require.NoError(t, err)
	com := e.com
	var released []*batch
	com.release = func(bs []*batch) { released = append(released, bs...) }
	com.start(context.Background(), 0)

	b := &batch{ords: []int64{1, 2, 5, 6}, lines: []int{2, 3, 6, 7}, emails: make([]uint64, 4),
		payloads: make([]uint64, 4), sources: make([]uint64, 4), minOrd: 1, maxOrd: 6, acked: true,
		vals: [][]string{{"a@example.com"}, {"b@example.com"}, {"x@example.com", "=X"}, {"d@example.com"}},
		res: sink.BatchResult{Sent: 3, Requests: 2, Retries: 1,
			Rejects: []sink.RowReject{{Index: 2, Email: "x@example.com", Reason: "refused"}}}}
	com.await([]outcome{{ord: 3, kind: outDuplicate}, {ord: 4, kind: outRejected, reject: &state.Reject{Line: 5}}})

	com.advance(context.Background(), 3, 0, []*batch{b}, false) // the batch, whole, and row 3
	require.True(t, b.committed)
	for com.pending > 0 {
		com.written(<-com.done)
	}
	require.Equal(t, []*batch{b}, released, "its slot is free before the checkpoint passes its last row")
	store.mu.Lock()
	require.Len(t, store.cps, 1)
	require.Equal(t, [][]int64{{5, 6}}, store.cps[0].Acked, "the rows above the checkpoint are recorded")
	require.Equal(t, state.Counts{Read: 3, Sent: 3, Rejected: 1, Duplicates: 1, Batches: 1, Requests: 2, Retries: 1},
		store.cps[0].Delta)
	store.mu.Unlock()
	com.advance(context.Background(), 6, 0, []*batch{b}, false) // row 4 and the position
	for com.pending > 0 {
		com.written(<-com.done)
	}
	require.NoError(t, com.close())

	got, pos, rejects := store.total()
	require.Equal(t, int64(6), pos)
	require.Equal(t, state.Counts{Read: 6, Sent: 3, Rejected: 2, Duplicates: 1, Batches: 1, Requests: 2, Retries: 1}, got)
	require.Len(t, rejects, 2)
	require.Equal(t, state.Reject{Ordinal: 5, Line: 6, Value: "x@example.com", Code: mapping.CodeRefused, Reason: "refused",
		Row: `["x@example.com","=X"]`}, rejects[0], "a refused row is recorded whole")
	require.Equal(t, 5, rejects[1].Line)
}

// TestCommitterSplitsRunsOfUnchangedRows: the unchanged rows of a delta sync come as runs (one
// outcome for many rows); a checkpoint inside a run counts the rows at or below it, and the
// next the rest.
func TestCommitterSplitsRunsOfUnchangedRows(t *testing.T) {
	t.Parallel()
	cfg, store := stubConfig(t, people(1, nil), &ackSender{})
	e, err := New(cfg)
	require.NoError(t, err)
	com := e.com
	com.start(context.Background(), 0)
	var outs []outcome
	for ord := int64(1); ord <= 10; ord++ {
		if ord == 4 {
			outs = append(outs, outcome{ord: ord, kind: outDuplicate})
			continue
		}
		outs = appendUnchanged(outs, outcome{ord: ord, kind: outUnchanged})
	}
	require.Equal(t, []outcome{{ord: 3, run: 3, kind: outUnchanged}, {ord: 4, kind: outDuplicate},
		{ord: 10, run: 6, kind: outUnchanged}}, outs, "rows 1-3 and 5-10 are runs")
	com.await(outs)
	for _, w := range []int64{2, 7, 10} {
		com.advance(context.Background(), w, 0, nil, false)
		for com.pending > 0 {
			com.written(<-com.done)
		}
	}
	require.NoError(t, com.close())
	store.mu.Lock()
	defer store.mu.Unlock()
	require.Len(t, store.cps, 3)
	require.Equal(t, state.Counts{Read: 2, Unchanged: 2}, store.cps[0].Delta)
	require.Equal(t, state.Counts{Read: 5, Unchanged: 4, Duplicates: 1}, store.cps[1].Delta)
	require.Equal(t, state.Counts{Read: 3, Unchanged: 3}, store.cps[2].Delta)
}

// savingStore is a memStore whose first fingerprint save (of several steps) lasts until a
// checkpoint was written between its steps, or 10 s.
type savingStore struct {
	*memStore
	saves  int
	during int // checkpoints written between the steps of the first save
}

func (s *savingStore) SaveFingerprintsStepped(_ context.Context, _ *state.FingerprintSet, between func()) error {
	if s.saves++; s.saves > 1 || between == nil {
		return nil
	}
	count := func() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.cps) }
	before := count()
	for deadline := time.Now().Add(10 * time.Second); count() == before && time.Now().Before(deadline); {
		between()
		runtime.Gosched()
	}
	s.during = count() - before
	return nil
}

// TestCheckpointsGoOnDuringFingerprintSave: a run goes on while its fingerprints are saved:
// the checkpoints of the batches acknowledged meanwhile are written between the save's steps
// (freeing the window's slots), not after the whole save; the books stay exact.
func TestCheckpointsGoOnDuringFingerprintSave(t *testing.T) {
	t.Parallel()
	const n = 20_000
	cfg, mem := stubConfig(t, people(n, nil), &ackSender{})
	store := &savingStore{memStore: mem}
	cfg.Store, cfg.FingerprintFlush = store, 3000
	e, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, e.Run(context.Background(), 0))

	require.Positive(t, store.during, "no checkpoint was written while the fingerprints were saved")
	got, pos, _ := mem.total()
	require.Equal(t, int64(n), pos)
	require.Equal(t, int64(n), got.Read)
	require.Equal(t, int64(n), got.Sent)
}

// saveLog is a memStore that notes each fingerprint save.
type saveLog struct {
	*memStore
	saves chan struct{}
}

func (s *saveLog) SaveFingerprintsStepped(context.Context, *state.FingerprintSet, func()) error {
	select {
	case s.saves <- struct{}{}:
	default:
	}
	return nil
}

// TestFingerprintsSavedWhileLastBatchesFly: once the whole source is read, the fingerprints
// are saved with the next checkpoint, while the last batches are still in flight, not after
// the last answer (with a service 20 ms away that was 16 ms more at the end of a run).
func TestFingerprintsSavedWhileLastBatchesFly(t *testing.T) {
	t.Parallel()
	sender := &holdingSender{calls: make(chan heldCall)}
	cfg, mem := stubConfig(t, people(2500, nil), sender)
	store := &saveLog{memStore: mem, saves: make(chan struct{}, 8)}
	cfg.Store, cfg.Window = store, 8
	e, err := New(cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background(), 0) }()
	var calls []heldCall
	for range 3 { // the last one sent when the source ended
		select {
		case c := <-sender.calls:
			calls = append(calls, c)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d batches sent, want 3", len(calls))
		}
	}
	calls[0].answer <- nil
	select {
	case <-store.saves:
	case <-time.After(10 * time.Second):
		t.Fatal("no fingerprints saved while batches were in flight")
	}
	for _, c := range calls[1:] {
		c.answer <- nil
	}
	require.NoError(t, <-done)
	got, pos, _ := mem.total()
	require.Equal(t, int64(2500), pos)
	require.Equal(t, int64(2500), got.Sent)
}

// spinningStore is a memStore whose fingerprint save takes saveSteps steps of CPU work each
// (as SQLite's does), calling between after each; step is the step under way (saveSteps+1
// once the save is done).
type spinningStore struct {
	*memStore
	step atomic.Int32
}

const saveSteps = 3

func (s *spinningStore) SaveFingerprintsStepped(_ context.Context, _ *state.FingerprintSet, between func()) error {
	for k := int32(1); k <= saveSteps; k++ {
		s.step.Store(k)
		for start := time.Now(); time.Since(start) < 2*time.Millisecond; {
		}
		if between != nil {
			between()
		}
	}
	s.step.Store(saveSteps + 1)
	return nil
}

// TestEngineRunsBetweenSaveSteps: on one core, the engine gets the core back between the
// steps of a fingerprint save, so a checkpoint written (and its batches' slots freed) before
// or during the save reaches it then, not after the whole save. An import's save of 250,000
// fingerprints takes about 70 ms of CPU; with a service 20 ms away, the window's slots waited
// for it: in e2ebench -latency 20ms -batches-in-flight 4 the slowest 1% of checkpoints took
// 28-69 ms to come back, 5-14 ms after the writer yielded between steps.
func TestEngineRunsBetweenSaveSteps(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // not parallel: the whole test binary on one core
	cfg, mem := stubConfig(t, people(1, nil), &ackSender{})
	store := &spinningStore{memStore: mem}
	cfg.Store, cfg.FingerprintFlush = store, 1
	e, err := New(cfg)
	require.NoError(t, err)
	com := e.com
	com.fps.Add(state.Fingerprint{Email: 1, Payload: 1}) // pending: the writer saves after its next checkpoint
	ctx := context.Background()
	com.start(ctx, 0)

	com.advance(ctx, 1, 0, nil, false) // written, handed back, and then the save starts
	u := <-com.done
	first := store.step.Load()
	com.written(u)
	com.advance(ctx, 2, 0, nil, false) // queued while the save goes on
	u = <-com.done
	second := store.step.Load()
	com.written(u)
	require.NoError(t, com.close())

	require.Equal(t, int32(1), first, "the engine got the checkpoint back after the save's first step")
	require.LessOrEqual(t, second, int32(saveSteps), "the checkpoint queued during the save was written between its steps")
	_, pos, _ := mem.total()
	require.Equal(t, int64(2), pos)
}
