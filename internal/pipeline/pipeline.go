package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// ErrInterrupted ends a run whose worker is shutting down; it resumes from its checkpoint.
var ErrInterrupted = errors.New("worker shut down; the run resumes from its checkpoint")

// Engine runs one import or sync run (or its dry run) through the stages.
type Engine struct {
	cfg       Config
	log       *slog.Logger
	prod      *producer
	filt      *filter
	bat       *batcher
	led       *ledger
	committer *committer

	lastRead    int64
	complete    bool   // the whole source was read, and a resumed run read every row before its checkpoint again
	incomplete  string // why a read to the end is not complete
	unplacedMin int64  // smallest ordinal of a chunk's rows not yet placed in a batch; 0 = none
	bytes       int64  // source bytes consumed up to lastRead
	waitRows    time.Duration
	waitWindow  time.Duration
}

// New builds the engine of a run.
func New(cfg Config) (*Engine, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	e := &Engine{cfg: cfg, log: cfg.Logger}
	e.filt = newFilter(cfg)
	e.prod = newProducer(cfg, e.filt)
	e.bat = newBatcher(cfg)
	e.led = newLedger(cfg)
	e.committer = newCommitter(cfg)
	return e, nil
}

// Run streams the source from startPos (the run's checkpoint) until its end, ctx's end, a
// failure, or Config.Stopping. It returns nil when every row is done and checkpointed,
// ErrInterrupted on a stop. Run may be called once.
//
// The producer and filter run on goroutines of their own, the committer's writer on
// another; this goroutine places rows in batches, sends them, and keeps the ledger, so
// that mapping the next rows overlaps with sending and checkpointing the previous ones.
func (e *Engine) Run(ctx context.Context, startPos int64) (err error) {
	e.lastRead = startPos
	e.led.start(startPos)
	e.committer.start(ctx)
	prodCtx, stopProducer := context.WithCancel(ctx)
	chunks := make(chan *chunk, engineChunks)
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		e.prod.produce(prodCtx, startPos, chunks)
	}()
	defer func() {
		stopProducer()
		<-prodDone
		e.bat.close()
		if cerr := e.committer.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	started := time.Now()
	defer e.logTimings(ctx, started)
	readErr := e.placeAll(ctx, chunks)
	stopProducer()
	if readErr == nil && e.led.err == nil {
		// The whole source is read: send what is left, and save the fingerprints with the
		// next checkpoint, while the last batches are in flight.
		e.committer.saveEarly()
		e.bat.closeAll()
		readErr = e.sendClosed(ctx)
	}
	return e.finish(ctx, readErr)
}

// logTimings logs where the run's time went (e2ebench reads it).
func (e *Engine) logTimings(ctx context.Context, started time.Time) {
	e.log.DebugContext(ctx, "pipeline timings", slog.Duration("total", time.Since(started)),
		slog.Duration("waiting_for_rows", e.waitRows), slog.Duration("waiting_for_window", e.waitWindow),
		slog.Int("batches", e.bat.seq), slog.Int("window", e.cfg.Window),
		slog.Int("checkpoints_by_engine", e.committer.byEngine), slog.Int64("checkpoints_by_writer", e.committer.byWriter.Load()),
		slog.Duration("slots_sending", e.led.slots.Sending),
		slog.Duration("slots_acked_waiting_to_be_counted", e.led.slots.WaitingToBeCounted),
		slog.Duration("slots_acked_waiting_for_checkpoint", e.led.slots.WaitingForCheckpoint))
}

// placeAll takes the producer's chunks in until the last one, a failure or a stop.
func (e *Engine) placeAll(ctx context.Context, chunks <-chan *chunk) error {
	for {
		t0 := time.Now()
		c, ok := <-chunks
		e.waitRows += time.Since(t0)
		switch {
		case !ok: // the producer stopped without reaching the end of the source: ctx ended
			if err := ctx.Err(); err != nil {
				return err
			}
			return errors.New("reading the source stopped")
		case c.err != nil:
			return c.err
		case e.stopping():
			return ErrInterrupted
		}
		if err := e.place(ctx, c); err != nil {
			return err
		}
		if c.eof {
			e.atEnd(c)
			return nil
		}
		e.prod.recycle(c)
		if e.led.err != nil {
			return nil
		}
	}
}

func (e *Engine) stopping() bool {
	select {
	case <-e.cfg.Stopping:
		return true
	default:
		return false
	}
}

// place takes a chunk in: its outcomes await the checkpoint, its rows go to their batches,
// and the batches that close go out.
func (e *Engine) place(ctx context.Context, c *chunk) error {
	if len(c.rows) > 0 {
		e.unplacedMin = c.rows[0].Ordinal
	}
	e.lastRead, e.bytes = c.lastRead, c.bytes
	if len(c.rows) > 0 {
		e.led.setSheet(c.rows[0].Sheet)
	}
	e.led.await(c.outcomes)
	for i := range c.rows {
		e.bat.add(c, i)
		if err := e.sendClosed(ctx); err != nil {
			return err
		}
	}
	e.unplacedMin = 0
	e.bat.closeLagging(e.lastRead)
	if err := e.sendClosed(ctx); err != nil {
		return err
	}
	e.advance(ctx, false)
	return nil
}

// sendClosed sends the batches the batcher closed, in order, each once the ledger has room
// for it.
func (e *Engine) sendClosed(ctx context.Context) error {
	for b := e.bat.next(); b != nil; b = e.bat.next() {
		if err := e.waitRoom(ctx, b); err != nil {
			return err
		}
		e.led.sent(b)
		e.bat.send(ctx)
	}
	return nil
}

// waitRoom handles events until b may be sent (see ledger.room), or the run failed.
func (e *Engine) waitRoom(ctx context.Context, b *batch) error {
	for {
		if e.led.err != nil {
			return e.led.err
		}
		ok, conflict := e.led.room(b)
		if ok {
			return nil
		}
		if conflict && e.cfg.OnConflictWait != nil {
			e.cfg.OnConflictWait(e.bat.seq + 1)
		}
		t0 := time.Now()
		err := e.waitEvent(ctx)
		e.waitWindow += time.Since(t0)
		if err != nil {
			return err
		}
	}
}

// finish lets what is in flight finish (also on a stop or a failure: its acknowledgements
// are checkpointed), writes the last checkpoint, and returns the run's error.
func (e *Engine) finish(ctx context.Context, readErr error) error {
	for e.led.busy() {
		if err := e.waitEvent(ctx); err != nil {
			return errors.Join(readErr, err)
		}
	}
	if !e.led.stopped {
		e.advance(ctx, true)
		for e.led.pending > 0 {
			if err := e.waitEvent(ctx); err != nil {
				return err
			}
		}
	}
	if e.led.err != nil {
		return e.led.err
	}
	return readErr
}

// waitEvent handles the next answer of a batch or written checkpoint.
func (e *Engine) waitEvent(ctx context.Context) error {
	select {
	case b := <-e.bat.results:
		if e.led.answered(b) {
			e.advance(ctx, true)
		}
	case u := <-e.committer.done:
		e.written(u)
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// advance hands the committer a checkpoint of everything newly done, if any; now: this
// goroutine waits for the window (or the end) and may write it itself. It waits while
// maxPendingCommits are queued.
func (e *Engine) advance(ctx context.Context, now bool) {
	held := e.bat.firstUnsent()
	if e.unplacedMin > 0 && (held == 0 || e.unplacedMin < held) {
		held = e.unplacedMin
	}
	u := e.led.count(e.lastRead, held, e.bytes)
	if u == nil {
		return
	}
	for e.led.pending >= maxPendingCommits {
		select {
		case w := <-e.committer.done:
			e.written(w)
		case <-ctx.Done():
			return
		}
	}
	e.led.queued()
	if e.committer.submit(ctx, u, now && e.led.pending == 1) {
		e.written(u)
	}
}

// written takes a checkpoint back from the committer: the ledger frees the batches it
// counted, for the batcher to reuse.
func (e *Engine) written(u *commitUnit) {
	freed, ok := e.led.written(u)
	if !ok {
		return
	}
	e.bat.recycle(freed)
	if e.cfg.OnCommit != nil {
		e.cfg.OnCommit(u.cp.Delta)
	}
}
