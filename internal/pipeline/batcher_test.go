package pipeline

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

// filtered reads every record of cfg's source into one chunk, mapped and filtered as the
// producer and the filter do, without an engine.
func filtered(t *testing.T, cfg Config) *chunk {
	t.Helper()
	cfg = cfg.withDefaults()
	f := newFilter(cfg)
	c := newChunk(0)
	for {
		rec, err := cfg.Reader.Next(context.Background())
		if err != nil {
			break
		}
		c.recs = append(c.recs, rec)
	}
	newProducer(cfg, f).mapChunk(c)
	require.NoError(t, f.run(context.Background(), c))
	return c
}

// TestBatcherGroups: rows go into one batch per status group; a batch is closed when full,
// and the closed batches are sent in the order closed, each reporting its answer; the rows
// placed and not sent hold the checkpoint (firstUnsent).
func TestBatcherGroups(t *testing.T) {
	t.Parallel()
	sender := &holdingSender{calls: make(chan heldCall, 4)}
	cfg, _ := stubConfig(t, people(2400, nil), sender)
	c := filtered(t, cfg)
	bat := newBatcher(cfg)
	defer bat.close()
	for i := range c.rows {
		bat.add(c, i)
	}
	// Rows 1-1333 but every fourth filled the first batch of the group without a status;
	// the unsubscribed group (every fourth row) is open from row 4.
	first := bat.next()
	require.NotNil(t, first)
	require.Len(t, first.rows, 1000)
	require.Equal(t, int64(1), bat.firstUnsent())
	require.Same(t, first, bat.send(context.Background()))
	require.Nil(t, bat.next(), "one batch closed")
	require.Equal(t, int64(4), bat.firstUnsent(), "the open unsubscribed batch")
	call := <-sender.calls
	require.Equal(t, "person1333@example.com", call.rows[999].Email)
	call.answer <- nil
	answered := <-bat.results
	require.Same(t, first, answered)
	require.NoError(t, answered.err)
	require.Equal(t, sink.BatchResult{Sent: 1000, Requests: 1}, answered.res)

	bat.closeAll()
	unsub := bat.send(context.Background()) // the older first
	require.Equal(t, sink.StatusUnsubscribed, unsub.key.status)
	require.Len(t, unsub.rows, 600)
	rest := bat.send(context.Background())
	require.Len(t, rest.rows, 2400-600-1000, "the rest of the group without a status")
	require.Equal(t, int64(1334), rest.minOrd)
	require.Zero(t, bat.firstUnsent())
	require.Equal(t, 3, bat.seq)
	for range 2 {
		(<-sender.calls).answer <- nil
		<-bat.results
	}
}

// TestBatcherLaterRowForAnEmail: a row whose e-mail is in an open batch (a duplicate under
// "last") closes that batch first, so that it goes in a later request and wins.
func TestBatcherLaterRowForAnEmail(t *testing.T) {
	t.Parallel()
	r := people(6, nil)
	r.rows[4][0] = "person2@example.com" // row 5 repeats row 2
	cfg, _ := stubConfig(t, r, &ackSender{})
	c := filtered(t, cfg)
	bat := newBatcher(cfg)
	defer bat.close()
	for i := range c.rows {
		bat.add(c, i)
	}
	earlier := bat.next()
	require.NotNil(t, earlier)
	require.Equal(t, []int64{1, 2, 3}, earlier.ords, "closed before row 5 came")
	bat.closeAll()
	var later []int64
	for bat.next() != nil {
		b := bat.send(context.Background())
		<-bat.results
		if b != earlier {
			later = append(later, b.ords...)
		}
	}
	require.Equal(t, []int64{4, 5, 6}, later)
}

// TestLaggingBatches: an open batch far behind the last row read is closed unfull, so that a
// rare status group does not hold the checkpoint back; a delta run's batches (the few rows
// that changed) may lag ten times as far, to go fuller, in fewer requests.
func TestLaggingBatches(t *testing.T) {
	t.Parallel()
	for _, delta := range []bool{false, true} {
		cfg, _ := stubConfig(t, people(1, nil), &ackSender{})
		cfg.Delta = delta
		c := filtered(t, cfg)
		bat := newBatcher(cfg)
		bat.add(c, 0)
		lag := int64(10_000)
		if delta {
			lag = 100_000
		}
		bat.closeLagging(1 + lag)
		require.Nil(t, bat.next(), "delta %v: not yet %d rows behind", delta, lag)
		bat.closeLagging(2 + lag)
		require.NotNil(t, bat.next(), "delta %v: closed once %d rows behind", delta, lag)
		require.Empty(t, bat.open)
	}
}

// TestBatcherReusesFreedBatches: a batch the ledger freed is filled again with new rows,
// keeping nothing of the old ones.
func TestBatcherReusesFreedBatches(t *testing.T) {
	t.Parallel()
	cfg, _ := stubConfig(t, people(8, nil), &ackSender{})
	c := filtered(t, cfg)
	bat := newBatcher(cfg)
	defer bat.close()
	bat.add(c, 0)
	bat.closeAll()
	old := bat.send(context.Background())
	<-bat.results
	bat.recycle([]*batch{old})
	bat.add(c, 1)
	bat.closeAll()
	b := bat.next()
	require.Same(t, old, b, "the freed batch's arrays are used again")
	require.Equal(t, []int64{c.rows[1].Ordinal}, b.ords)
	require.Len(t, b.rows, 1)
	require.Nil(t, b.err)
	require.Zero(t, b.state)
}
