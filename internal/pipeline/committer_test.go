package pipeline

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// testCommitter is a committer writing to a memStore (or the store given), not yet started.
func testCommitter(t *testing.T, store Store, flush int) (*committer, *state.FingerprintSet) {
	t.Helper()
	fps := state.NewFingerprintSet(7)
	return newCommitter(Config{Store: store, Fingerprints: fps, FingerprintFlush: flush}.withDefaults()), fps
}

// unitAt is a checkpoint at pos that counts n rows sent, with their fingerprints.
func unitAt(pos int64, n int) *commitUnit {
	u := &commitUnit{cp: state.Checkpoint{RunID: 1, Owner: "o", Position: pos, Delta: state.Counts{Read: int64(n), Sent: int64(n)}}}
	for i := range n {
		u.fps = append(u.fps, state.Fingerprint{Email: uint64(pos)<<8 | uint64(i) + 1, Payload: 1})
	}
	return u
}

// TestCommitterWritesWhenIdle: a checkpoint handed over while the writer is idle is written
// on the caller's goroutine at once (no switch to the writer and back); otherwise the writer
// writes it and hands it back. Either way its fingerprints are added once it is written.
func TestCommitterWritesWhenIdle(t *testing.T) {
	t.Parallel()
	store := &memStore{sup: memSuppressions{}}
	c, fps := testCommitter(t, store, 1<<20)
	ctx := context.Background()
	c.start(ctx)

	u := unitAt(1000, 3)
	require.True(t, c.submit(ctx, u, true), "written by the caller")
	_, pos, _ := store.total()
	require.Equal(t, int64(1000), pos)
	require.NoError(t, u.err)
	require.Equal(t, 3, fps.Pending())

	u = unitAt(2000, 2)
	require.False(t, c.submit(ctx, u, false), "handed to the writer")
	require.Same(t, u, <-c.done)
	require.NoError(t, u.err)
	require.NoError(t, c.close())
	got, pos, _ := store.total()
	require.Equal(t, int64(2000), pos)
	require.Equal(t, int64(5), got.Sent)
	require.Equal(t, 5, fps.Pending())
}

// TestCommitterWritesQueuedTogether: the checkpoints queued while the writer was busy are
// written in one transaction, as one checkpoint (the last position, everything they count),
// and handed back each, in order.
func TestCommitterWritesQueuedTogether(t *testing.T) {
	t.Parallel()
	store := &memStore{sup: memSuppressions{}}
	c, _ := testCommitter(t, store, 1<<20)
	ctx := context.Background()
	units := []*commitUnit{unitAt(10, 1), unitAt(20, 2), unitAt(30, 3)}
	units[0].cp.Rejects = []state.Reject{{Ordinal: 5}}
	units[1].cp.Acked = [][]int64{{25}}
	units[2].cp.Roster = &state.RosterChange{Sync: "crm", ListID: 7, Add: []state.Member{{Email: "a@example.com"}}}
	for _, u := range units {
		require.False(t, c.submit(ctx, u, false))
	}
	c.start(ctx) // finds all three queued
	for _, u := range units {
		require.Same(t, u, <-c.done)
	}
	require.NoError(t, c.close())
	store.mu.Lock()
	defer store.mu.Unlock()
	require.Len(t, store.cps, 1)
	require.Equal(t, state.Checkpoint{RunID: 1, Owner: "o", Position: 30, Delta: state.Counts{Read: 6, Sent: 6},
		Rejects: []state.Reject{{Ordinal: 5}}, Acked: [][]int64{{25}},
		Roster: &state.RosterChange{Sync: "crm", ListID: 7, Add: []state.Member{{Email: "a@example.com"}}}}, store.cps[0])
}

// failingStore is a memStore whose checkpoints fail.
type failingStore struct{ *memStore }

var errLeaseLost = errors.New("lease lost")

func (failingStore) Checkpoint(context.Context, state.Checkpoint) error { return errLeaseLost }

// TestCommitterFailedCheckpoint: a checkpoint that cannot be written comes back with the
// error, and its fingerprints are not added (the rows are not known to be recorded).
func TestCommitterFailedCheckpoint(t *testing.T) {
	t.Parallel()
	c, fps := testCommitter(t, failingStore{&memStore{}}, 1<<20)
	ctx := context.Background()
	c.start(ctx)
	u := unitAt(10, 2)
	require.True(t, c.submit(ctx, u, true))
	require.ErrorIs(t, u.err, errLeaseLost)
	u = unitAt(20, 2)
	c.submit(ctx, u, false)
	<-c.done
	require.ErrorIs(t, u.err, errLeaseLost)
	require.NoError(t, c.close())
	require.Zero(t, fps.Pending())
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

// TestCommitterSavesFingerprints: the writer saves the fingerprints once FingerprintFlush are
// pending (a checkpoint that brings them there goes to the writer even when it is idle), and,
// after saveEarly (the whole source is read), with the next checkpoint.
func TestCommitterSavesFingerprints(t *testing.T) {
	t.Parallel()
	store := &saveLog{memStore: &memStore{}, saves: make(chan struct{}, 4)}
	c, fps := testCommitter(t, store, 4)
	ctx := context.Background()
	c.start(ctx)
	require.True(t, c.submit(ctx, unitAt(10, 3), true))
	require.False(t, c.submit(ctx, unitAt(20, 1), true), "the fourth fingerprint: the writer saves")
	<-c.done
	<-store.saves
	require.Equal(t, 4, fps.Pending(), "the store's save (a stub) kept them")

	c.saveEarly()
	require.False(t, c.submit(ctx, unitAt(30, 1), true))
	<-c.done
	<-store.saves
	require.NoError(t, c.close())
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
// for it: the slowest 1% of checkpoints took 28-69 ms to come back, 5-14 ms after the writer
// yielded between steps. (This goroutine plays the engine.)
func TestEngineRunsBetweenSaveSteps(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // not parallel: the whole test binary on one core
	mem := &memStore{}
	store := &spinningStore{memStore: mem}
	c, fps := testCommitter(t, store, 1)
	fps.Add(state.Fingerprint{Email: 1, Payload: 1}) // pending: the writer saves after its next checkpoint
	ctx := context.Background()
	c.start(ctx)

	c.submit(ctx, unitAt(1, 0), false) // written, handed back, and then the save starts
	<-c.done
	first := store.step.Load()
	c.submit(ctx, unitAt(2, 0), false) // queued while the save goes on
	<-c.done
	second := store.step.Load()
	require.NoError(t, c.close())

	require.Equal(t, int32(1), first, "the engine got the checkpoint back after the save's first step")
	require.LessOrEqual(t, second, int32(saveSteps), "the checkpoint queued during the save was written between its steps")
	_, pos, _ := mem.total()
	require.Equal(t, int64(2), pos)
}

// TestAcknowledgementFreesSlotWhenHandled: when the engine waits for the window and no
// checkpoint is being written, handling an acknowledgement writes the checkpoint that covers
// the batch and frees its slot, without waiting for another goroutine: the ledger counts it,
// the committer writes it on the engine's goroutine, the ledger frees the batch.
func TestAcknowledgementFreesSlotWhenHandled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &memStore{}
	c, _ := testCommitter(t, store, 1<<20)
	c.start(ctx)
	defer func() { require.NoError(t, c.close()) }()
	l := newLedger(Config{RunID: 1, Owner: "o", Window: 1})
	b, next := testBatch([]int64{1, 2, 3}), testBatch([]int64{4})
	l.sent(b)
	ok, _ := l.room(next)
	require.False(t, ok, "the window is full")

	b.res = sink.BatchResult{Sent: 3, Requests: 1}
	require.True(t, l.answered(b))
	u := l.count(3, 4, 0)
	l.queued()
	require.True(t, c.submit(ctx, u, l.pending == 1), "written at once")
	freed, ok := l.written(u)
	require.True(t, ok)
	require.Equal(t, []*batch{b}, freed)
	ok, _ = l.room(next)
	require.True(t, ok, "the slot is free")
	counts, pos, _ := store.total()
	require.Equal(t, int64(3), pos)
	require.Equal(t, int64(3), counts.Sent)
}

// gatedStore is a memStore that saves fingerprints beside checkpoints (as Postgres does),
// and whose first save waits until gate is closed; started is closed when it begins.
type gatedStore struct {
	*memStore
	started, gate chan struct{}
	saves         int // saves begun
	pending       int // the fingerprints pending when the first save ended
}

func (s *gatedStore) SavesBeside() bool { return true }

func (s *gatedStore) SaveFingerprintsStepped(_ context.Context, f *state.FingerprintSet, between func()) error {
	s.saves++
	if s.saves > 1 {
		return nil
	}
	close(s.started)
	<-s.gate
	if between != nil {
		between()
	}
	s.pending = f.Pending()
	return nil
}

// TestCheckpointsWrittenBesideTheSave: on a store that saves fingerprints beside checkpoint
// writes, a checkpoint handed over during a save is written and handed back while the save
// goes on (on Postgres a step takes a few milliseconds of the server's time, and the window's
// slots waited for it); its fingerprints are added once the save ended, for the next save.
func TestCheckpointsWrittenBesideTheSave(t *testing.T) {
	t.Parallel()
	mem := &memStore{}
	store := &gatedStore{memStore: mem, started: make(chan struct{}), gate: make(chan struct{})}
	c, fps := testCommitter(t, store, 1)
	fps.Add(state.Fingerprint{Email: 1, Payload: 1}) // pending: the writer saves after its next checkpoint
	ctx := context.Background()
	c.start(ctx)

	c.submit(ctx, unitAt(1, 0), false) // written, handed back, and then the save starts
	<-c.done
	<-store.started
	u := unitAt(2, 3)
	require.False(t, c.submit(ctx, u, true), "during a save the writer writes")
	select {
	case got := <-c.done:
		require.Same(t, u, got)
	case <-time.After(10 * time.Second): // a watchdog: the save waits for the gate until then
		t.Fatal("the checkpoint waited for the save")
	}
	require.NoError(t, u.err)
	_, pos, _ := mem.total()
	require.Equal(t, int64(2), pos)
	close(store.gate)
	require.NoError(t, c.close())
	require.Equal(t, 1, store.pending, "the save saw none of the fingerprints held")
	require.Equal(t, 2, store.saves, "the run's last save")
	require.Equal(t, 4, fps.Pending(), "the fingerprints held are added after the save (the stub saves nothing)")
}

// orderStore is a gatedStore that notes, for each checkpoint position written, whether the
// gated save had ended by then.
type orderStore struct {
	*gatedStore
	ended   atomic.Bool
	afterOf map[int64]bool // position → written after the save ended (the writer's alone)
}

func (s *orderStore) SaveFingerprintsStepped(ctx context.Context, f *state.FingerprintSet, between func()) error {
	err := s.gatedStore.SaveFingerprintsStepped(ctx, f, between)
	s.ended.Store(true)
	return err
}

func (s *orderStore) Checkpoint(ctx context.Context, cp state.Checkpoint) error {
	s.afterOf[cp.Position] = s.ended.Load()
	return s.gatedStore.Checkpoint(ctx, cp)
}

// TestSaveBesideHoldsAtMostAFlush: during a save beside, the writer holds the fingerprints
// of the checkpoints it writes until the save ended; once it holds FingerprintFlush of them
// it writes no more checkpoints until then, so what a run holds does not grow with the time
// a save takes (on Postgres a save of a ten-million-row list held 700,000, 17 MB).
func TestSaveBesideHoldsAtMostAFlush(t *testing.T) {
	t.Parallel()
	mem := &memStore{}
	store := &orderStore{gatedStore: &gatedStore{memStore: mem, started: make(chan struct{}), gate: make(chan struct{})},
		afterOf: map[int64]bool{}}
	c, fps := testCommitter(t, store, 4)
	for i := range 4 {
		fps.Add(state.Fingerprint{Email: uint64(1000 + i), Payload: 1}) // a flush pending
	}
	ctx := context.Background()
	c.start(ctx)
	c.submit(ctx, unitAt(1, 0), false) // written, handed back, and then the save starts
	<-c.done
	<-store.started
	for pos := int64(2); pos <= 3; pos++ { // 3 held, then 6: at least a flush
		u := unitAt(pos, 3)
		c.submit(ctx, u, true)
		select {
		case got := <-c.done:
			require.Same(t, u, got)
		case <-time.After(10 * time.Second): // a watchdog: the save waits for the gate until then
			t.Fatalf("checkpoint %d waited for the save", pos)
		}
	}
	last := unitAt(4, 1)
	c.submit(ctx, last, true)
	runtime.Gosched() // a writer that takes it takes it now, while the save waits for the gate
	close(store.gate)
	require.Same(t, last, <-c.done)
	require.NoError(t, c.close())
	require.False(t, store.afterOf[2] || store.afterOf[3], "written beside the save")
	require.True(t, store.afterOf[4], "written beside the save while it held a flush of fingerprints")
	require.Equal(t, 4+3+3+1, fps.Pending(), "every fingerprint added once the save ended (the stub saves nothing)")
}
