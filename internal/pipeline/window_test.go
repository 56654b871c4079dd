package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testlog"
	"github.com/subsync/subsync/state"
)

// oneGroupConfig is the Config of a run of n people who all consent (one status group) with
// the given window.
func oneGroupConfig(t *testing.T, n, window int, sender Sender) (Config, *memStore) {
	t.Helper()
	r := people(n, nil)
	for _, row := range r.rows {
		row[1] = "ja"
	}
	cfg, store := stubConfig(t, r, sender)
	cfg.Window = window
	return cfg, store
}

// timings is the engine's "pipeline timings" log record of a run (what e2ebench reads).
func timings(t *testing.T, log *testlog.Buffer) map[string]float64 {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(log.String()))
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec["msg"] != "pipeline timings" {
			continue
		}
		out := map[string]float64{}
		for k, v := range rec {
			if f, ok := v.(float64); ok {
				out[k] = f
			}
		}
		return out
	}
	t.Fatal("no pipeline timings logged")
	return nil
}

// TestWindowSlotTimes: the engine accounts for where its window's slots spent their time
// (the "pipeline timings" a benchmark reads): every batch's time from sent to freed is
// sending, acknowledged waiting to be counted, or counted waiting for its checkpoint, and the
// slots together never spend more than the window's size times the run.
func TestWindowSlotTimes(t *testing.T) {
	t.Parallel()
	sender := &holdingSender{calls: make(chan heldCall)}
	cfg, _ := oneGroupConfig(t, 4000, 2, sender) // four full batches
	var log testlog.Buffer
	cfg.Logger = slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEngine(t, cfg)
	started := time.Now()
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background(), 0) }()

	// The batches are answered in pairs, the second of each pair first.
	var held time.Duration
	for range 2 {
		first := <-sender.calls
		t0 := time.Now()
		second := <-sender.calls
		second.answer <- nil
		first.answer <- nil
		held += time.Since(t0)
	}
	runErr := <-done
	require.NoError(t, runErr)
	elapsed := time.Since(started)
	tm := timings(t, &log)
	sending := time.Duration(tm["slots_sending"])
	counting := time.Duration(tm["slots_acked_waiting_to_be_counted"])
	writing := time.Duration(tm["slots_acked_waiting_for_checkpoint"])
	require.Equal(t, float64(4), tm["batches"])
	require.GreaterOrEqual(t, sending, held, "a batch is sending from its request until its answer")
	require.Positive(t, counting, "an acknowledged batch waits for the engine to count it")
	require.LessOrEqual(t, sending+counting+writing, time.Duration(cfg.Window)*elapsed)
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
