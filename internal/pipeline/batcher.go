package pipeline

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"time"

	"github.com/subsync/subsync/sink"
)

// lagRows: an open batch holding rows this far behind the last row read is sent even if not
// full, so that a rare status group does not hold the checkpoint back. A delta run sends
// the few rows that changed in a long stretch of the source (a hundredth, on a nightly
// sync): its batches may lag deltaLagRows, so that they go full, in a tenth of the requests.
const (
	lagRows      = 10 * sink.MaxBatchRows
	deltaLagRows = 100 * sink.MaxBatchRows
)

// The batcher is the third stage: it places the filtered rows in batches, one open batch per
// status group, and sends them, with at most a window of batches sent and not yet counted by
// a written checkpoint (see committer.countBatch). A row whose e-mail is in a sent,
// unacknowledged batch waits for that batch's acknowledgement before its own batch is sent,
// so the last row for an e-mail wins.
//
// It runs on the engine's goroutine; each batch is sent on a goroutine of its own, which
// reports back on results.
type batcher struct {
	sender         Sender
	listID         int64
	tag            string
	size           int   // the window's size
	lag            int64 // lagRows or deltaLagRows
	onConflictWait func(seq int)
	com            *committer
	wait           func(context.Context) error // handles the next event (the engine's waitEvent)

	open     map[groupKey]*batch
	window   []*batch // sent, not yet checkpointed, in send order
	nUnacked int
	seq      int
	firstErr error    // the first failure: reading stops, in-flight batches finish
	free     []*batch // checkpointed batches, for reuse
	results  chan *batch
	done     chan struct{} // closed when the run ends: senders stop reporting

	waitWindow time.Duration
	slots      slotTimes
}

// slotTimes is where the window's slots spent their time, summed over the batches
// checkpointed: a slot is taken when its batch is sent and freed when the checkpoint that
// counts it is written.
type slotTimes struct {
	// Sending: sent until answered.
	Sending time.Duration
	// WaitingToBeCounted: acknowledged until the engine counted it in a checkpoint.
	WaitingToBeCounted time.Duration
	// WaitingForCheckpoint: counted until that checkpoint was written and taken back.
	WaitingForCheckpoint time.Duration
}

type groupKey struct{ status, statusMobile string }

// batch is up to sink.MaxBatchRows rows of one status group, in ordinal order.
type batch struct {
	seq      int
	key      groupKey
	rows     []sink.Subscriber
	mem      rowMemory // the values of rows made in mapping (see chunk.go)
	ords     []int64
	lines    []int
	emails   []uint64
	payloads []uint64
	sources  []uint64
	vals     [][]string // the rows' source values, for a refused row's reject
	members  []uint8    // with a roster: the rows' member flags
	// dupEmails are the e-mail hashes of the rows whose e-mail came earlier in the run
	// (chunk.dups): only they can be in an earlier batch.
	dupEmails      []uint64
	emailSet       map[uint64]struct{} // emails as a set, made when a later batch first asks
	minOrd, maxOrd int64

	res       sink.BatchResult
	err       error
	answered  bool // the service answered (acknowledged, or the request failed)
	acked     bool
	committed bool // counted by a checkpoint: handed to the committer for good

	sentAt, ackedAt, coveredAt time.Time // for slotTimes
}

func newBatcher(cfg Config, com *committer, wait func(context.Context) error) *batcher {
	lag := int64(lagRows)
	if cfg.Delta {
		lag = deltaLagRows
	}
	return &batcher{sender: cfg.Sender, listID: cfg.ListID, tag: cfg.Tag, size: cfg.Window, lag: lag,
		onConflictWait: cfg.OnConflictWait, com: com, wait: wait,
		open:    map[groupKey]*batch{},
		results: make(chan *batch, cfg.Window), done: make(chan struct{})}
}

// close ends the run for the senders still in flight.
func (t *batcher) close() { close(t.done) }

// fail records the run's first failure.
func (t *batcher) fail(err error) {
	if t.firstErr == nil {
		t.firstErr = err
	}
}

// add puts row i of c into the open batch of its status group, sending batches as they fill.
func (t *batcher) add(ctx context.Context, c *chunk, i int) error {
	r := c.rows[i]
	emailHash := c.emails[i]
	key := groupKey{r.Status, r.StatusMobile}
	if c.dups[i] {
		// The same e-mail may be in an open batch (a duplicate under "last"): send that
		// batch first, so this row goes in a later request and wins.
		for _, b := range t.openByAge() {
			if slices.Contains(b.emails, emailHash) {
				if err := t.dispatch(ctx, b); err != nil {
					return err
				}
			}
		}
	}
	b := t.open[key]
	if b == nil {
		b = t.newBatch(key, r.Ordinal)
		t.open[key] = b
	}
	b.mem.keep(&r, c)
	b.rows = append(b.rows, r.Sub)
	b.ords = append(b.ords, r.Ordinal)
	b.lines = append(b.lines, r.Line)
	b.emails = append(b.emails, emailHash)
	b.payloads = append(b.payloads, c.payloads[i])
	b.sources = append(b.sources, c.sources[i])
	b.vals = append(b.vals, c.vals[i])
	if c.dups[i] {
		b.dupEmails = append(b.dupEmails, emailHash)
	}
	if len(c.members) > 0 {
		b.members = append(b.members, c.members[i])
	}
	b.maxOrd = r.Ordinal
	if len(b.rows) == sink.MaxBatchRows {
		return t.dispatch(ctx, b)
	}
	return nil
}

// newBatch returns an empty batch, reusing the arrays of a checkpointed one.
func (t *batcher) newBatch(key groupKey, minOrd int64) *batch {
	if n := len(t.free); n > 0 {
		b := t.free[n-1]
		t.free = t.free[:n-1]
		b.mem.reset()
		clear(b.vals) // drop the source rows
		*b = batch{key: key, minOrd: minOrd, mem: b.mem, rows: b.rows[:0], ords: b.ords[:0], lines: b.lines[:0],
			emails: b.emails[:0], payloads: b.payloads[:0], sources: b.sources[:0], vals: b.vals[:0],
			members: b.members[:0], dupEmails: b.dupEmails[:0]}
		return b
	}
	const n = sink.MaxBatchRows
	return &batch{key: key, minOrd: minOrd, rows: make([]sink.Subscriber, 0, n), ords: make([]int64, 0, n),
		lines: make([]int, 0, n), emails: make([]uint64, 0, n), payloads: make([]uint64, 0, n),
		sources: make([]uint64, 0, n), vals: make([][]string, 0, n)}
}

// openByAge returns the open batches, oldest first row first.
func (t *batcher) openByAge() []*batch {
	if len(t.open) == 0 {
		return nil
	}
	bs := make([]*batch, 0, len(t.open))
	for _, b := range t.open {
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(a, b *batch) int { return cmp.Compare(a.minOrd, b.minOrd) })
	return bs
}

// sendLagging sends the open batches whose first row is far behind the last row read.
func (t *batcher) sendLagging(ctx context.Context, lastRead int64) error {
	for _, b := range t.openByAge() {
		if b.minOrd < lastRead-t.lag {
			if err := t.dispatch(ctx, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush sends every open batch, oldest first: the whole source is read.
func (t *batcher) flush(ctx context.Context) error {
	for _, b := range t.openByAge() {
		if err := t.dispatch(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// dispatch sends an open batch once the window has room and no e-mail of it is in a sent,
// unacknowledged batch. b stays open (holding the checkpoint back) until it is sent.
func (t *batcher) dispatch(ctx context.Context, b *batch) error {
	for {
		if t.firstErr != nil {
			return t.firstErr
		}
		conflict := t.conflict(b)
		if !conflict && len(t.window) < t.size {
			break
		}
		if !conflict && t.nUnacked == 0 && t.com.pending == 0 {
			// The window is full of acknowledged batches whose checkpoint waits for rows of
			// a batch not sent yet: sending is the only way forward.
			break
		}
		if conflict && t.onConflictWait != nil {
			t.onConflictWait(t.seq + 1)
		}
		t0 := time.Now()
		err := t.wait(ctx)
		t.waitWindow += time.Since(t0)
		if err != nil {
			return err
		}
	}
	delete(t.open, b.key)
	t.seq++
	b.seq, b.sentAt = t.seq, time.Now()
	t.window = append(t.window, b)
	t.nUnacked++
	opts := sink.BulkOptions{ListID: t.listID, Status: b.key.status, StatusMobile: b.key.statusMobile, Tag: t.tag}
	go func() {
		b.res, b.err = t.sender.InsertBatch(ctx, opts, b.rows)
		select {
		case t.results <- b:
		case <-t.done:
		}
	}()
	// Let the new goroutine start the request now: on a busy core it would otherwise wait
	// until this goroutine blocks, and readied goroutines queued meanwhile (the mappers) run
	// before it. Measured with e2ebench -latency 20ms on one core: the request started 1.4 ms
	// after its batch was sent, 5% of a round trip, and 0.1 ms with this.
	runtime.Gosched()
	return nil
}

// conflict reports whether a row of b has its e-mail in a sent batch not yet answered. Only
// a row whose e-mail came earlier in the run can: most batches have none, and are not looked
// at row by row.
func (t *batcher) conflict(b *batch) bool {
	if len(b.dupEmails) == 0 {
		return false
	}
	for _, s := range t.window {
		if s.answered {
			continue
		}
		if s.emailSet == nil {
			s.emailSet = make(map[uint64]struct{}, len(s.emails))
			for _, e := range s.emails {
				s.emailSet[e] = struct{}{}
			}
		}
		for _, e := range b.dupEmails {
			if _, ok := s.emailSet[e]; ok {
				return true
			}
		}
	}
	return false
}

// acked takes a sent batch's answer; it reports whether the service acknowledged it.
func (t *batcher) acked(b *batch) bool {
	t.nUnacked--
	b.answered = true
	if b.err != nil {
		// The batch stays in the window unacknowledged: the checkpoint never passes it, and
		// the next attempt sends it again.
		t.fail(b.err)
		return false
	}
	b.acked, b.ackedAt = true, time.Now()
	return true
}

// release takes back the batches a written checkpoint counted.
func (t *batcher) release(done []*batch) {
	t.window = slices.DeleteFunc(t.window, func(b *batch) bool { return b.committed && slices.Contains(done, b) })
	now := time.Now()
	for _, b := range done {
		t.slots.Sending += b.ackedAt.Sub(b.sentAt)
		t.slots.WaitingToBeCounted += b.coveredAt.Sub(b.ackedAt)
		t.slots.WaitingForCheckpoint += now.Sub(b.coveredAt)
		if len(t.free) < t.size+2 {
			clear(b.rows[:cap(b.rows)]) // drop the strings the payloads point at
			t.free = append(t.free, b)
		}
	}
}

// watermark is the highest ordinal below which every row is done, given the last row read
// and the first row of a chunk not yet placed (0: none).
func (t *batcher) watermark(lastRead, unplacedMin int64) int64 {
	w := lastRead
	hold := func(ord int64) { w = min(w, ord-1) }
	if unplacedMin > 0 {
		hold(unplacedMin)
	}
	for _, b := range t.open {
		hold(b.minOrd)
	}
	for _, b := range t.window {
		if !b.acked {
			hold(b.minOrd)
		}
	}
	return w
}
