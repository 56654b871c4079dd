package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// ErrInterrupted ends a run whose worker is shutting down; it resumes from its checkpoint.
var ErrInterrupted = errors.New("worker shut down; the run resumes from its checkpoint")

// Suppression policies: what happens to a row whose e-mail is on the suppression list.
const (
	// SuppressionSkip leaves the row out of the push. The default.
	SuppressionSkip = "skip"
	// SuppressionUpdateKeepStatus pushes the row through bulkinsert's status form with the
	// suppressed status, so the service keeps the person unsubscribed or bounced.
	SuppressionUpdateKeepStatus = "update-keep-status"
)

// Sender is what a run needs of the service; *sink.Client implements it.
type Sender interface {
	InsertBatch(ctx context.Context, opts sink.BulkOptions, rows []sink.Subscriber) (sink.BatchResult, error)
}

// Store is what a run needs of the database; StateStore adapts a *state.Store.
type Store interface {
	Checkpoint(ctx context.Context, cp state.Checkpoint) error
	// SaveFingerprintsStepped saves the fingerprints pending; it may do so in steps,
	// calling between (unless nil) after each (see state.Store.SaveFingerprintsStepped).
	SaveFingerprintsStepped(ctx context.Context, f *state.FingerprintSet, between func()) error
	SuppressionVersion(ctx context.Context) (int64, error)
	LoadSuppressions(ctx context.Context, listID int64) (Suppressions, error)
}

// Suppressions is a list's suppression list as loaded; *state.SuppressionSet implements it.
type Suppressions interface {
	Version() int64
	Len() int
	Status(emailHash uint64) (string, bool)
	// Erased reports whether the address whose hash is given belongs to a person erased by
	// `subsync forget`.
	Erased(emailHash uint64) bool
}

// StateStore adapts a *state.Store to Store.
func StateStore(s *state.Store) Store { return stateStore{s} }

type stateStore struct{ *state.Store }

func (s stateStore) LoadSuppressions(ctx context.Context, listID int64) (Suppressions, error) {
	return s.Store.LoadSuppressions(ctx, listID)
}

// Config is what one run streams, and where to. Reader, Mapper, Store and, unless DryRun,
// Sender are required.
type Config struct {
	Reader sources.Reader
	Mapper *mapping.Mapper
	Sender Sender
	Store  Store
	Logger *slog.Logger // nil: discard
	// MapWorkers is how many goroutines map records (at least one).
	MapWorkers int
	ListID     int64
	Tag        string // bulkinsert's tag mode
	// RunID, Owner and LeaseTTL identify the run and its lease in checkpoints.
	RunID    int64
	Owner    string
	LeaseTTL time.Duration
	// Window is how many batches may be sent and not yet checkpointed (at least one).
	Window int
	// Done are the ordinals above the run's checkpoint, ascending, that an earlier attempt
	// delivered and counted (state.Store.AckedAbove): they are read again for their e-mails
	// only, as the rows below the checkpoint are.
	Done []int64
	// Delta skips rows whose payload is unchanged since the last push (Fingerprints).
	Delta bool
	// Suppression is SuppressionSkip ("" too) or SuppressionUpdateKeepStatus.
	Suppression string
	// Suppressions is the list's suppression list as loaded before the run (nil: loaded by
	// the run); the run re-reads it whenever its version changes.
	Suppressions Suppressions
	// Fingerprints are the list's delta fingerprints (loaded for a delta run); the run adds
	// what is acknowledged and saves them every FingerprintFlush rows and at the end.
	Fingerprints     *state.FingerprintSet
	FingerprintFlush int
	// Roster, when set, is the roster of the sync the run belongs to, as loaded before the
	// run (state.Store.LoadRoster): the run records what it delivers in it, with each
	// checkpoint, and remembers every address and key it reads, for Removals. A mapping with a
	// key column (external_id) then moves people: see roster.go.
	Roster *state.Roster
	// Held, when set, makes the run a verifying one (Delta is then ignored): a row is sent
	// unless the service holds its e-mail with the values it sends (see Held), whatever the
	// fingerprints say, and the fingerprint of every row found held is stored.
	Held *Held
	// DryRun: outcomes carry the row's line, e-mail and status (see DryRun).
	DryRun bool
	// Stopping, when closed, stops the run: it checkpoints what is in flight and returns
	// ErrInterrupted.
	Stopping <-chan struct{}
	// OnCommit, when set, is called with the counts of each checkpoint written.
	OnCommit func(state.Counts)
	// OnConflictWait, when set (tests), is called each time a batch waits for an earlier
	// batch holding one of its e-mails to be acknowledged.
	OnConflictWait func(seq int)
}

func (c Config) validate() error {
	switch {
	case c.Reader == nil || c.Mapper == nil || c.Store == nil:
		return errors.New("pipeline: a reader, a mapper and a store are required")
	case c.Sender == nil && !c.DryRun:
		return errors.New("pipeline: a sender is required")
	case c.Suppression != "" && c.Suppression != SuppressionSkip && c.Suppression != SuppressionUpdateKeepStatus:
		return fmt.Errorf("pipeline: suppression %q: want %q or %q", c.Suppression, SuppressionSkip, SuppressionUpdateKeepStatus)
	}
	return nil
}

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

// withDefaults fills in what the Config leaves unset.
func (c Config) withDefaults() Config {
	c.Suppression = cmpOr(c.Suppression, SuppressionSkip)
	c.MapWorkers = max(1, c.MapWorkers)
	c.Window = max(1, c.Window)
	if c.Fingerprints == nil {
		c.Fingerprints = state.NewFingerprintSet(c.ListID)
	}
	if c.FingerprintFlush <= 0 {
		c.FingerprintFlush = 1 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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
