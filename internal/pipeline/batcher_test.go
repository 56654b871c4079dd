package pipeline

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

// TestBatcherGroupsAndWindow: rows go into one batch per status group, a batch is sent when
// full, at most the window's batches are sent and not yet checkpointed (a batch waits for
// room), and the watermark never passes an open or unacknowledged batch.
func TestBatcherGroupsAndWindow(t *testing.T) {
	t.Parallel()
	sender := &holdingSender{calls: make(chan heldCall, 4)}
	cfg, _ := stubConfig(t, people(2400, nil), sender)
	cfg.Window = 1
	e, err := New(cfg)
	require.NoError(t, err)
	waited := 0
	e.bat.wait = func(context.Context) error { // the engine's event loop, here: acknowledge
		waited++
		call := <-sender.calls
		call.answer <- nil
		e.bat.acked(<-e.bat.results)
		for _, b := range e.bat.window { // as a checkpoint would
			b.committed = true
		}
		e.bat.release(slices.Clone(e.bat.window))
		return nil
	}
	c := newChunk(0)
	r := cfg.Reader.(*sliceReader)
	for i := 0; i < 2400; i++ {
		rec, err := r.Next(context.Background())
		require.NoError(t, err)
		c.recs = append(c.recs, rec)
	}
	e.prod.mapChunk(c)
	require.NoError(t, e.filt.run(context.Background(), c))
	for i := range c.rows {
		require.NoError(t, e.bat.add(context.Background(), c, i))
	}
	// Rows 1-1333 but every fourth filled the first batch of the group without a status; it
	// is in the window; the unsubscribed group (every fourth row) is open from row 4.
	require.Len(t, e.bat.window, 1)
	require.Equal(t, 0, waited)
	require.Len(t, e.bat.open, 2)
	require.Equal(t, int64(0), e.bat.watermark(2400, 0), "the sent batch is not acknowledged")
	first := <-sender.calls
	require.Len(t, first.rows, 1000)
	require.Equal(t, "person1333@example.com", first.rows[999].Email)
	first.answer <- nil
	require.True(t, e.bat.acked(<-e.bat.results))
	require.Equal(t, int64(3), e.bat.watermark(2400, 0), "the open unsubscribed batch holds it at row 4")

	require.NoError(t, e.bat.flush(context.Background()))
	require.Equal(t, 1, waited, "the last batch waited for room in the window")
	require.Empty(t, e.bat.open)
	last := <-sender.calls
	require.Len(t, last.rows, 2400-600-1000, "the rest of the group without a status")
	last.answer <- nil
	<-e.bat.results
	require.Equal(t, 3, e.bat.seq)
	unsub := 0
	for _, b := range e.bat.window {
		if b.key.status == sink.StatusUnsubscribed {
			unsub = len(b.ords)
		}
	}
	require.Zero(t, unsub, "the unsubscribed batch was acknowledged and released")
}

// TestWindowSlotTimes: the engine accounts for where its window's slots spent their time
// (the "pipeline timings" a benchmark reads): every batch's time from sent to freed is
// sending, acknowledged waiting to be counted, or counted waiting for its checkpoint, and the
// slots together never spend more than the window's size times the run.
func TestWindowSlotTimes(t *testing.T) {
	t.Parallel()
	sender := &holdingSender{calls: make(chan heldCall)}
	e, cfg, _, _ := oneGroupEngine(t, 4000, 2, sender) // four full batches
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
	s := e.bat.slots
	require.Equal(t, 4, e.bat.seq)
	require.GreaterOrEqual(t, s.Sending, held, "a batch is sending from its request until its answer")
	require.Positive(t, s.WaitingToBeCounted, "an acknowledged batch waits for the engine to count it")
	require.LessOrEqual(t, s.Sending+s.WaitingToBeCounted+s.WaitingForCheckpoint, time.Duration(cfg.Window)*elapsed)
}

// TestAcknowledgementFreesSlotWhenHandled: when the engine waits for the window and no
// checkpoint is being written, handling an acknowledgement writes the checkpoint that covers
// the batch and frees its slot, without waiting for another goroutine.
func TestAcknowledgementFreesSlotWhenHandled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sender := &holdingSender{calls: make(chan heldCall, 1)}
	e, _, store, r := oneGroupEngine(t, 1000, 1, sender) // one full batch
	e.com.start(ctx, 0)
	defer func() {
		e.bat.close()
		require.NoError(t, e.com.close())
	}()
	c := newChunk(0)
	for range 1000 {
		rec, err := r.Next(ctx)
		require.NoError(t, err)
		c.recs = append(c.recs, rec)
	}
	e.prod.mapChunk(c)
	require.NoError(t, e.filt.run(ctx, c))
	e.lastRead = 1000
	for i := range c.rows {
		require.NoError(t, e.bat.add(ctx, c, i))
	}
	require.Len(t, e.bat.window, 1, "the full batch is sent")
	call := <-sender.calls
	call.answer <- nil

	require.NoError(t, e.waitEvent(ctx)) // the acknowledgement
	require.Empty(t, e.bat.window, "the slot is free")
	counts, pos, _ := store.total()
	require.Equal(t, int64(1000), pos)
	require.Equal(t, int64(1000), counts.Sent)
}

// oneGroupEngine is the engine of a run of n people who all consent (one status group) with
// the given window.
func oneGroupEngine(t *testing.T, n, window int, sender Sender) (*Engine, Config, *memStore, *sliceReader) {
	t.Helper()
	r := people(n, nil)
	for _, row := range r.rows {
		row[1] = "ja"
	}
	cfg, store := stubConfig(t, r, sender)
	cfg.Window = window
	e, err := New(cfg)
	require.NoError(t, err)
	return e, cfg, store, r
}

// TestLaggingBatches: an open batch far behind the last row read is sent unfull, so that a
// rare status group does not hold the checkpoint back; a delta run's batches (the few rows
// that changed) may lag ten times as far, to go fuller, in fewer requests.
func TestLaggingBatches(t *testing.T) {
	t.Parallel()
	for _, delta := range []bool{false, true} {
		sender := &ackSender{}
		cfg, _ := stubConfig(t, people(1, nil), sender)
		cfg.Delta = delta
		e, err := New(cfg)
		require.NoError(t, err)
		c := newChunk(0)
		rec, err := cfg.Reader.Next(context.Background())
		require.NoError(t, err)
		c.recs = append(c.recs, rec)
		e.prod.mapChunk(c)
		require.NoError(t, e.filt.run(context.Background(), c))
		require.NoError(t, e.bat.add(context.Background(), c, 0))
		lag := int64(10_000)
		if delta {
			lag = 100_000
		}
		require.NoError(t, e.bat.sendLagging(context.Background(), 1+lag))
		require.Len(t, e.bat.open, 1, "delta %v: not yet %d rows behind", delta, lag)
		require.NoError(t, e.bat.sendLagging(context.Background(), 2+lag))
		require.Empty(t, e.bat.open, "delta %v: sent once %d rows behind", delta, lag)
		require.Len(t, e.bat.window, 1)
	}
}
