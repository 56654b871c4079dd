package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// batchSender is what a run needs of the service; *sink.Client implements it.
type batchSender interface {
	InsertBatch(ctx context.Context, opts sink.BulkOptions, rows []sink.Subscriber) (sink.BatchResult, error)
}

// errInterrupted ends a run whose worker is shutting down; it resumes from its checkpoint.
var errInterrupted = errors.New("worker shut down; the run resumes from its checkpoint")

const (
	// chunkRows is how many mapped rows are filtered (suppression, delta) with one lookup.
	chunkRows = 1000
	// lagRows: an open batch holding rows this far behind the last row read is sent even if
	// not full, so that a rare status group does not hold the checkpoint back.
	lagRows = 10 * sink.MaxBatchRows
	// maxPendingCommits bounds checkpoints queued for the committer.
	maxPendingCommits = 32
	// commitTimeout bounds one checkpoint write. Checkpoints are written even while the job
	// is being cancelled: they record batches the service has already acknowledged.
	commitTimeout = 30 * time.Second
)

// pipeline streams one run: source → mapping → dedupe → filters (suppression, delta) →
// batches (≤1000, one per status group) → the service, with up to window batches sent and
// not yet checkpointed. Producer goroutines read, map (on every core) and filter; the run
// goroutine batches, sends and checkpoints; senders and the committer report back over
// channels.
//
// The checkpoint is the highest ordinal below which every row is done: rejected, filtered,
// or in a batch the service acknowledged. A checkpoint carries the counts, rejects and
// fingerprints of exactly the rows it newly covers, so a resumed run (which skips rows at or
// below the checkpoint) counts every row once, and re-sends at most the batches that were
// in the window when the worker died.
//
// A row whose e-mail is in a batch sent and not yet acknowledged waits for that batch's
// acknowledgement before its own batch is sent, so the last row for an e-mail wins.
type pipeline struct {
	store           *state.Store
	sender          batchSender
	log             *slog.Logger
	reader          sources.Reader
	mapper          *mapping.Mapper
	mapWorkers      int // goroutines mapping records (at least one)
	dedupe          *mapping.Deduper
	mappingFP       string
	listID          int64
	tag             string
	runID           int64
	owner           string
	ttl             time.Duration
	windowSize      int
	delta           bool // skip rows whose payload is unchanged since the last push
	suppressionMode string
	sup             *state.SuppressionSet // re-read by the producer whenever the list changed
	supChecked      time.Time             // when the suppression list's version was last read
	fps             *state.FingerprintSet // loaded for a delta run; collects what is acknowledged
	fast            bool                  // a delta run with fingerprints: records are resolved before mapping
	srcSeed         state.Hasher          // the start of every sourceHash
	srcCols         []int                 // the mapped columns, hashed by sourceHash
	emailCol        int                   // the e-mail column
	plan            bool                  // a dry run: outcomes carry the row's line, e-mail and status
	fpFlush         int
	stopping        <-chan struct{}
	onCommit        func(state.Counts)
	// onConflictWait, when set (tests), is called each time a batch waits for an earlier
	// batch holding one of its e-mails to be acknowledged.
	onConflictWait func(seq int)

	pos         int64 // position of the last checkpoint handed to the committer
	lastRead    int64
	unplacedMin int64 // smallest ordinal of a chunk's rows not yet placed in a batch; 0 = none
	bytes       int64 // source bytes consumed up to lastRead
	sheet       string
	open        map[groupKey]*batch
	unacked     map[uint64]int // e-mail hash → sent, unacknowledged batches holding it
	window      []*batch       // sent, not yet checkpointed, in send order
	nUnacked    int
	outcomes    []outcome // rows not sent (or counted) awaiting the checkpoint, in ordinal order
	seq         int
	firstErr    error        // the first failure: reading stops, in-flight batches finish
	commitErr   error        // a checkpoint failed (lease lost): nothing more is checkpointed
	uncounted   state.Counts // requests of failed batches, for the next checkpoint
	waitRows    time.Duration
	waitWindow  time.Duration
	freeChunks  chan *chunk // placed chunks back to the producer
	freeBatches []*batch    // checkpointed batches, for reuse

	results        chan *batch
	commits        chan *commitUnit
	commitDone     chan *commitUnit
	pendingCommits int
	done           chan struct{}
}

type groupKey struct{ status, statusMobile string }

type batch struct {
	seq            int
	key            groupKey
	rows           []sink.Subscriber
	arena          mapping.Arena // the values of rows made in mapping (see add), until reused
	ords           []int64
	lines          []int
	emails         []uint64
	payloads       []uint64
	sources        []uint64
	minOrd, maxOrd int64

	res       sink.BatchResult
	err       error
	acked     bool
	counted   int  // the leading rows (ordinals at or below a checkpoint) counted by a checkpoint
	rejAt     int  // the first of res.Rejects not yet counted
	committed bool // every row counted: handed to the committer for good
}

// outcome is what happened to one row outside of a batch's acknowledgement.
type outcome struct {
	ord    int64
	kind   outcomeKind
	reject *state.Reject // outRejected
	note   *planNote     // dry runs only
	// refresh is stored with the checkpoint: an unchanged payload whose source values
	// changed (the next run then finds the row unchanged without mapping it).
	refresh *state.Fingerprint
}

// outcomeKind is what happened to a row: what it counts as.
type outcomeKind uint8

const (
	outRejected outcomeKind = iota + 1
	outDuplicate
	outSuppressed
	outUnchanged
)

// counts is what the outcome adds to a run's counts.
func (o *outcome) counts() state.Counts {
	switch o.kind {
	case outRejected:
		return state.Counts{Rejected: 1}
	case outDuplicate:
		return state.Counts{Duplicates: 1}
	case outSuppressed:
		return state.Counts{Suppressed: 1}
	case outUnchanged:
		return state.Counts{Unchanged: 1}
	}
	return state.Counts{}
}

// planNote is what a dry run's plan says of a row that is not sent: its line, e-mail, and
// the suppressed status of a suppressed row.
type planNote struct {
	line   int
	email  string
	status string
}

type commitUnit struct {
	cp      state.Checkpoint
	fps     []state.Fingerprint
	batches []*batch
	err     error
}

// chunk is a stretch of the source the producer read, mapped and filtered: the rows to
// send, and the outcomes of the others, all with ordinals in (previous lastRead, lastRead].
type chunk struct {
	recs   []sources.Record // read, to be mapped
	before []sources.Record // read, done before a restart: mapped for their e-mails only
	// cands are the records of a delta run, not yet mapped: those whose source values are
	// what was last acknowledged are unchanged without mapping (see dedupeAndFilter).
	cands    []cand
	candFPs  []state.Fingerprint // scratch: the fingerprints stored for cands
	candKeys []uint64            // scratch: the cands' e-mail hashes
	rows     []mapping.Row
	// arena holds the values the rows' mapping made; reset when the chunk is recycled, once
	// the rows are in their batches (which adopt them) or dropped.
	arena    mapping.Arena
	sources  []uint64 // the rows' source hashes (sourceHash)
	dups     []bool   // the row's e-mail appeared earlier in the run
	emails   []uint64
	payloads []uint64
	outcomes []outcome           // in ordinal order once filtered
	observe  []string            // e-mails of rows done before a restart, for the deduper only
	skip     []bool              // scratch of filter
	stored   []state.Fingerprint // scratch of filter: the fingerprints stored for the rows' e-mails
	known    []bool              // scratch of filter: whether one is stored
	lastRead int64
	bytes    int64 // source bytes consumed at the end of the chunk
	err      error // the producer stopped: errInterrupted, a read or lookup failure
	eof      bool  // the last chunk: the whole source is read
}

// run streams the source until its end, ctx's end, a failure, or the runtime stopping. It
// returns nil when every row is done and checkpointed, errInterrupted on a stop.
//
// The producer (see produce) reads, maps, dedupes and filters the source in chunks; this
// goroutine places rows in batches, sends them and checkpoints, so that mapping the next
// rows overlaps with sending and checkpointing the previous ones.
func (p *pipeline) run(ctx context.Context, startPos int64) (err error) {
	p.pos, p.lastRead = startPos, startPos
	p.open = map[groupKey]*batch{}
	p.unacked = map[uint64]int{}
	p.results = make(chan *batch, p.windowSize)
	p.commits = make(chan *commitUnit, 2*maxPendingCommits)
	p.commitDone = make(chan *commitUnit, 2*maxPendingCommits)
	p.done = make(chan struct{})
	committerErr := make(chan error, 1)
	go func() { committerErr <- p.committer(ctx) }()
	prodCtx, stopProducer := context.WithCancel(ctx)
	chunks := make(chan *chunk, 2)
	p.freeChunks = make(chan *chunk, 4)
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		p.produce(prodCtx, startPos, chunks)
	}()
	defer func() {
		stopProducer()
		<-prodDone
		close(p.done)
		close(p.commits)
		if cerr := <-committerErr; cerr != nil && err == nil {
			err = cerr
		}
	}()

	var readErr error
	started := time.Now()
	defer func() {
		p.log.DebugContext(ctx, "pipeline timings", slog.Duration("total", time.Since(started)),
			slog.Duration("waiting_for_rows", p.waitRows), slog.Duration("waiting_for_window", p.waitWindow),
			slog.Int("batches", p.seq))
	}()
	for {
		t0 := time.Now()
		c, ok := <-chunks
		p.waitRows += time.Since(t0)
		if !ok {
			// The producer stopped without reaching the end of the source: ctx ended.
			readErr = ctx.Err()
			if readErr == nil {
				readErr = errors.New("reading the source stopped")
			}
			break
		}
		if c.err != nil {
			readErr = c.err
			break
		}
		select {
		case <-p.stopping:
			readErr = errInterrupted
		default:
		}
		if readErr != nil {
			break
		}
		if err := p.place(ctx, c); err != nil {
			readErr = err
			break
		}
		if c.eof {
			break
		}
		c.recycle()
		select {
		case p.freeChunks <- c:
		default:
		}
		if p.firstErr != nil {
			break
		}
	}
	stopProducer()
	if readErr == nil && p.firstErr == nil {
		// The whole source is read: send what is left, oldest first.
		for _, b := range p.openByAge() {
			if err := p.dispatch(ctx, b); err != nil {
				readErr = err
				break
			}
		}
	}
	// Let what is in flight finish (also on a stop or a failure: its acknowledgements are
	// checkpointed), then write the last checkpoint.
	for p.nUnacked > 0 || p.pendingCommits > 0 {
		if err := p.waitEvent(ctx); err != nil {
			return errors.Join(readErr, err)
		}
	}
	if p.commitErr == nil {
		p.advance(ctx)
		for p.pendingCommits > 0 {
			if err := p.waitEvent(ctx); err != nil {
				return err
			}
		}
	}
	switch {
	case p.firstErr != nil:
		return p.firstErr
	case readErr != nil:
		return readErr
	}
	return nil
}

// produce reads the source from startPos into chunks of up to chunkRows rows to send, until
// the end of the source (the last chunk says eof), a failure or a stop (a last chunk carries
// the error), or ctx's end (it closes out without either).
//
// It is three stages, so that they run on every core: read reads the source into chunks of
// records; p.mapWorkers goroutines map them, a chunk each at a time (mapping is the costliest
// step, and a Mapper may be used concurrently); this goroutine takes the chunks back in
// source order and dedupes and filters each. Chunks go to the mappers and come back from
// them round-robin, which keeps them in order.
func (p *pipeline) produce(ctx context.Context, startPos int64, out chan<- *chunk) {
	defer close(out)
	mctx, cancel := context.WithCancel(ctx)
	n := max(1, p.mapWorkers)
	toMap, mapped := make([]chan *chunk, n), make([]chan *chunk, n)
	for i := range n {
		toMap[i], mapped[i] = make(chan *chunk, 1), make(chan *chunk, 1)
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.read(mctx, startPos, toMap) })
	for i := range n {
		wg.Go(func() {
			defer close(mapped[i])
			for c := range toMap[i] {
				p.mapChunk(c)
				mapped[i] <- c // drained below when this goroutine stops early
			}
		})
	}
	defer func() {
		cancel() // read stops and closes toMap; the mappers finish what they hold
		for _, ch := range mapped {
			for range ch {
			}
		}
		wg.Wait()
	}()
	for k := 0; ; k++ {
		c, ok := <-mapped[k%n]
		if !ok {
			return // read stopped at ctx's end
		}
		if c.err == nil {
			if err := p.dedupeAndFilter(ctx, c); err != nil {
				c = &chunk{err: err}
			}
		}
		last := c.err != nil || c.eof // c is the run's once sent
		select {
		case out <- c:
		case <-ctx.Done():
			return
		}
		if last {
			return
		}
	}
}

// read is the first stage of produce: it reads the source from startPos into chunks of up
// to chunkRows records, and hands them to the mappers in turn (out[k%len(out)] gets the k-th).
// Records done before a restart go in the chunk too: the mappers map them for their e-mails,
// which the deduper only observes.
func (p *pipeline) read(ctx context.Context, startPos int64, out []chan *chunk) {
	k := 0
	defer func() {
		for _, ch := range out {
			close(ch)
		}
	}()
	emit := func(c *chunk) bool {
		select {
		case out[k%len(out)] <- c:
			k++
			return true
		case <-ctx.Done():
			return false
		}
	}
	fail := func(err error) { emit(&chunk{err: err}) }
	next := func(lastRead int64) *chunk {
		select {
		case c := <-p.freeChunks:
			c.lastRead = lastRead
			return c
		default:
			return &chunk{lastRead: lastRead, rows: make([]mapping.Row, 0, chunkRows)}
		}
	}
	c := next(startPos)
	for {
		select {
		case <-p.stopping:
			fail(errInterrupted)
			return
		default:
		}
		rec, err := p.reader.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		var rowErr *sources.RowError
		if err != nil && !errors.As(err, &rowErr) {
			if ctx.Err() != nil {
				fail(ctx.Err())
			} else {
				fail(fmt.Errorf("read source: %w", err))
			}
			return
		}
		switch {
		case rec.Ordinal <= startPos:
			if rowErr == nil {
				c.before = append(c.before, rec)
			}
		case rowErr != nil:
			c.lastRead = rec.Ordinal
			c.reject(p.mapper.RejectRow(rec, rowErr))
		default:
			c.lastRead = rec.Ordinal
			c.recs = append(c.recs, rec)
		}
		if len(c.recs)+len(c.before)+len(c.outcomes) >= chunkRows {
			c.bytes = p.reader.Progress().Bytes
			lastRead := c.lastRead // c is the next stage's once sent (and recycled after)
			if !emit(c) {
				return
			}
			c = next(lastRead)
		}
	}
	c.bytes = p.reader.Progress().Bytes
	c.eof = true
	emit(c)
}

// mapChunk is the second stage of produce: it maps the chunk's records into rows and
// rejects. A delta run's records become candidates, mapped later only if they changed (see
// resolve). Records done before a restart only give their e-mails, for the deduper.
func (p *pipeline) mapChunk(c *chunk) {
	var row mapping.Row
	for i := range c.before {
		if rej := p.mapper.MapInto(&c.arena, &c.before[i], &row); rej == nil {
			c.observe = append(c.observe, row.Sub.Email)
		}
	}
	for i := range c.recs {
		rec := &c.recs[i]
		if p.fast {
			email := state.NormaliseEmail(p.rawEmail(*rec))
			h := state.NewHasher() // EmailHash of the normalised e-mail
			h.String(email)
			c.cands = append(c.cands, cand{rec: *rec, email: email, src: p.sourceHash(*rec), key: h.Sum64()})
			continue
		}
		if c.mapRow(p.mapper, rec) != nil {
			c.sources = append(c.sources, p.sourceHash(*rec))
		}
	}
	clear(c.before) // drop the records
	clear(c.recs)
	c.before, c.recs = c.before[:0], c.recs[:0]
}

// dedupeAndFilter is the last stage of produce: it finds the chunk's duplicate e-mails by
// the mapping's policy, then filters the rows (see filter), leaving the outcomes in ordinal
// order. A delta run's records are first resolved (see resolve).
func (p *pipeline) dedupeAndFilter(ctx context.Context, c *chunk) error {
	for _, e := range c.observe {
		p.dedupe.Observe(e)
	}
	clear(c.observe)
	c.observe = c.observe[:0]
	c.dups = c.dups[:0]
	if len(c.cands) > 0 {
		if err := p.resolve(ctx, c); err != nil {
			return err
		}
	} else {
		n := 0
		for i, row := range c.rows {
			send, dup, ok := p.check(c, &row)
			if !ok {
				continue
			}
			if send {
				c.rows[n], c.sources[n] = row, c.sources[i]
				c.dups = append(c.dups, dup)
				n++
			}
		}
		clear(c.rows[n:])
		c.rows, c.sources = c.rows[:n], c.sources[:n]
	}
	if err := p.filter(ctx, c); err != nil {
		return err
	}
	byOrd := func(a, b outcome) int { return cmpInt64(a.ord, b.ord) }
	if !slices.IsSortedFunc(c.outcomes, byOrd) {
		slices.SortStableFunc(c.outcomes, byOrd)
	}
	return nil
}

// check runs a mapped row past the deduper: send is whether it goes on (to the filter), dup
// whether its e-mail came before; ok is false for a row the duplicate policy rejected.
func (p *pipeline) check(c *chunk, row *mapping.Row) (send, dup, ok bool) {
	before := p.dedupe.Duplicates()
	send, drej := p.dedupe.Check(*row)
	dup = p.dedupe.Duplicates() > before
	if dup {
		if drej != nil {
			c.reject(*drej)
			return false, true, false
		}
		c.outcomes = append(c.outcomes, p.outcome(row, outDuplicate, ""))
	}
	return send, dup, true
}

// cand is a record of a delta run, read but not mapped.
type cand struct {
	rec   sources.Record
	email string // its raw e-mail, trimmed and lower-cased (state.NormaliseEmail)
	src   uint64 // sourceHash of the record
	key   uint64 // EmailHash of the e-mail
}

// resolve turns a delta run's records into outcomes or mapped rows, in source order.
//
// A record whose e-mail has a stored fingerprint with the same source hash maps to the very
// payload that was last acknowledged (the hash covers the mapping and the values of every
// mapped column), and that payload is still what the service holds: the record is unchanged,
// without being mapped, unless its e-mail came earlier in the run (the deduper's verdict
// then needs the mapped row) or it is suppressed under update-keep-status (it is then sent
// with its status). Every other record is mapped and goes through the deduper and filter as
// in any run; filter compares its payload with the stored one.
//
// The stored fingerprint's key was the hash of the mapped e-mail, so a hit also says that the
// raw e-mail, trimmed and lower-cased, is the mapped one: the deduper gets it as it would.
func (p *pipeline) resolve(ctx context.Context, c *chunk) error {
	n := len(c.cands)
	c.candKeys = slices.Grow(c.candKeys[:0], n)[:n]
	c.candFPs = slices.Grow(c.candFPs[:0], n)[:n]
	c.known = slices.Grow(c.known[:0], n)[:n]
	for i := range c.cands {
		c.candKeys[i] = c.cands[i].key
	}
	p.fps.LookupBatch(c.candKeys, c.candFPs, c.known)
	if err := p.refreshSuppressions(ctx); err != nil {
		return err
	}
	for i := range c.cands {
		cd := &c.cands[i]
		if c.known[i] && c.candFPs[i].Source == cd.src {
			st, suppressed := p.sup.Status(cd.key)
			if !suppressed || p.suppressionMode != SuppressionUpdateKeepStatus {
				email := cd.email
				if !p.dedupe.Observe(email) {
					o := outcome{ord: cd.rec.Ordinal, kind: outUnchanged}
					if suppressed {
						o.kind = outSuppressed
					}
					if p.plan {
						o.note = &planNote{line: cd.rec.Line, email: email, status: st}
					}
					c.outcomes = append(c.outcomes, o)
					continue
				}
				// Seen before in this run: the deduper decides on the mapped row. Observe
				// recorded the e-mail, so check counts it as the duplicate it is.
			}
		}
		row := c.mapRow(p.mapper, &cd.rec)
		if row == nil {
			continue
		}
		send, dup, ok := p.check(c, row)
		if !ok || !send {
			c.dropRow()
			continue
		}
		c.sources = append(c.sources, cd.src)
		c.dups = append(c.dups, dup)
	}
	clear(c.cands) // drop the records
	c.cands = c.cands[:0]
	return nil
}

// sourceHash is the hash of a record's mapped columns (with the mapping's fingerprint and the
// columns' names): two records with the same hash map to the same payload. Never 0.
func (p *pipeline) sourceHash(rec sources.Record) uint64 {
	h := p.srcSeed
	for _, i := range p.srcCols {
		if i < len(rec.Values) {
			h.String(rec.Values[i])
		} else {
			h.String("")
		}
	}
	return h.Sum64() | 1
}

// rawEmail is the record's e-mail cell as read.
func (p *pipeline) rawEmail(rec sources.Record) string {
	if p.emailCol < len(rec.Values) {
		return rec.Values[p.emailCol]
	}
	return ""
}

// recycle empties the chunk for reuse, keeping its arrays and its Arena's blocks: nothing
// may refer to the values of its rows any more (a batch adopts those it takes).
func (c *chunk) recycle() {
	clear(c.rows) // drop the strings the rows point at
	clear(c.outcomes)
	clear(c.cands)
	c.arena.Reset()
	*c = chunk{arena: c.arena, recs: c.recs[:0], before: c.before[:0], rows: c.rows[:0], sources: c.sources[:0], dups: c.dups[:0], emails: c.emails[:0],
		payloads: c.payloads[:0], outcomes: c.outcomes[:0], skip: c.skip[:0], observe: c.observe[:0],
		stored: c.stored[:0], known: c.known[:0], cands: c.cands[:0], candFPs: c.candFPs[:0], candKeys: c.candKeys[:0]}
}

// mapRow maps rec in place, into the chunk's next row, and returns that row; or records the
// reject and returns nil.
func (c *chunk) mapRow(m *mapping.Mapper, rec *sources.Record) *mapping.Row {
	c.rows = append(c.rows, mapping.Row{})
	row := &c.rows[len(c.rows)-1]
	if rej := m.MapInto(&c.arena, rec, row); rej != nil {
		c.dropRow()
		c.reject(*rej)
		return nil
	}
	return row
}

// dropRow takes back the chunk's last row, leaving its slot holding nothing of the record.
func (c *chunk) dropRow() {
	c.rows[len(c.rows)-1] = mapping.Row{}
	c.rows = c.rows[:len(c.rows)-1]
}

// reject records a reject; its value is copied, for it may be one mapping made in the chunk's
// Arena (a lower-cased duplicate e-mail), and the reject outlives the chunk.
func (c *chunk) reject(r mapping.Reject) {
	c.outcomes = append(c.outcomes, outcome{ord: r.Ordinal, kind: outRejected, reject: &state.Reject{
		Ordinal: r.Ordinal, Line: r.Line, Sheet: r.Sheet, Column: r.Column, Value: strings.Clone(r.Value), Code: r.Code, Reason: r.Message,
	}})
}

// outcome returns the outcome of a row; a dry run's also say which row (and status).
func (p *pipeline) outcome(r *mapping.Row, kind outcomeKind, status string) outcome {
	o := outcome{ord: r.Ordinal, kind: kind}
	if p.plan {
		o.note = &planNote{line: r.Line, email: strings.Clone(r.Sub.Email), status: status} // r's chunk is recycled
	}
	return o
}

// filter applies the suppression list and the delta fingerprints to the chunk's rows, and
// hashes the survivors' e-mails and payloads.
//
// The suppression list is checked for every chunk: its version is read (one primary-key
// lookup, at most every suppressionRecheck) and the list re-read when a status pull changed
// it since, so a pull that lands while a long run goes on takes effect within a tenth of a
// second. A suppressed row is never sent
// as active: it is skipped (SuppressionSkip), or sent with its suppressed status
// (SuppressionUpdateKeepStatus); either way it is counted as suppressed.
func (p *pipeline) filter(ctx context.Context, c *chunk) error {
	if len(c.rows) == 0 {
		return nil
	}
	if err := p.refreshSuppressions(ctx); err != nil {
		return err
	}
	c.skip = slices.Grow(c.skip[:0], len(c.rows))[:len(c.rows)]
	clear(c.skip)
	skip := c.skip
	c.emails = slices.Grow(c.emails[:0], len(c.rows))[:len(c.rows)]
	c.payloads = slices.Grow(c.payloads[:0], len(c.rows))[:len(c.rows)]
	checkSup := p.sup.Len() > 0
	seed := state.NewHasher() // the mapping's fingerprint, hashed once for the chunk
	seed.String(p.mappingFP)
	for i := range c.rows {
		r := &c.rows[i]
		c.emails[i] = state.EmailHash(r.Sub.Email)
		if checkSup {
			if st, ok := p.sup.Status(c.emails[i]); ok {
				c.outcomes = append(c.outcomes, p.outcome(r, outSuppressed, st))
				if p.suppressionMode != SuppressionUpdateKeepStatus {
					skip[i] = true
					continue
				}
				// Sent through the status form with the status the service holds, so it
				// stays unsubscribed or bounced while the data is updated. (Its source hash
				// no longer says what is sent: 0 never matches.)
				r.Status = st
				c.sources[i] = 0
			}
		}
		c.payloads[i] = payloadHash(seed, r)
	}
	if p.delta && p.fps.Len() > 0 {
		c.stored = slices.Grow(c.stored[:0], len(c.rows))[:len(c.rows)]
		c.known = slices.Grow(c.known[:0], len(c.rows))[:len(c.rows)]
		p.fps.LookupBatch(c.emails, c.stored, c.known)
		for i := range c.rows {
			// A later row for an e-mail (duplicates = last) is sent even when unchanged: it
			// must win over an earlier row of this run that may have been sent.
			if !skip[i] && !c.dups[i] && c.known[i] && c.stored[i].Payload == c.payloads[i] {
				o := p.outcome(&c.rows[i], outUnchanged, c.rows[i].Status)
				if c.stored[i].Source != c.sources[i] {
					o.refresh = &state.Fingerprint{Email: c.emails[i], Payload: c.payloads[i], Source: c.sources[i]}
				}
				c.outcomes = append(c.outcomes, o)
				skip[i] = true
			}
		}
	}
	n := 0
	for i := range c.rows {
		if !skip[i] {
			c.rows[n], c.sources[n], c.dups[n], c.emails[n], c.payloads[n] =
				c.rows[i], c.sources[i], c.dups[i], c.emails[i], c.payloads[i]
			n++
		}
	}
	clear(c.rows[n:])
	c.rows, c.sources, c.dups, c.emails, c.payloads = c.rows[:n], c.sources[:n], c.dups[:n], c.emails[:n], c.payloads[:n]
	return nil
}

// suppressionRecheck is how often a run reads the suppression list's version.
const suppressionRecheck = 100 * time.Millisecond

// refreshSuppressions re-reads the suppression list when its version changed (or on the first
// call). The version is read at most every suppressionRecheck.
func (p *pipeline) refreshSuppressions(ctx context.Context) error {
	if p.sup != nil && time.Since(p.supChecked) < suppressionRecheck {
		return nil
	}
	p.supChecked = time.Now()
	v, err := p.store.SuppressionVersion(ctx)
	if err != nil {
		return err
	}
	if p.sup != nil && p.sup.Version() == v {
		return nil
	}
	sup, err := p.store.LoadSuppressions(ctx, p.listID)
	if err != nil {
		return err
	}
	if p.sup != nil {
		p.log.InfoContext(ctx, "the suppression list changed during the run: checking the next rows against it",
			slog.Int("suppressed", sup.Len()))
	}
	p.sup = sup
	return nil
}

// place takes a chunk in: its outcomes await the checkpoint, its rows go to their batches.
func (p *pipeline) place(ctx context.Context, c *chunk) error {
	if len(c.rows) > 0 {
		p.unplacedMin = c.rows[0].Ordinal
	}
	p.lastRead = c.lastRead
	p.bytes = c.bytes
	if p.sheet == "" && len(c.rows) > 0 {
		p.sheet = c.rows[0].Sheet
	}
	p.outcomes = append(p.outcomes, c.outcomes...)
	for i, r := range c.rows {
		if err := p.add(ctx, r, &c.arena, c.dups[i], c.emails[i], c.payloads[i], c.sources[i]); err != nil {
			return err
		}
	}
	p.unplacedMin = 0
	// A rare status group must not hold the checkpoint back for long.
	for _, b := range p.openByAge() {
		if b.minOrd < p.lastRead-lagRows {
			if err := p.dispatch(ctx, b); err != nil {
				return err
			}
		}
	}
	p.advance(ctx)
	return nil
}

// payloadHash is the delta fingerprint of a row: the mapping (seed has hashed its
// fingerprint), the statuses and every field the push sends (custom fields in name order).
func payloadHash(seed state.Hasher, r *mapping.Row) uint64 {
	h := seed
	h.String(r.Status)
	h.String(r.StatusMobile)
	s := &r.Sub
	for _, v := range [...]string{s.Email, s.Firstname, s.Lastname, s.Address, s.Zip, s.City, s.Phone,
		s.Company, s.Birthday, s.Gender} {
		h.String(v)
	}
	h.Uint64(uint64(len(s.Fields)))
	for _, f := range s.SortedFields() {
		h.String(f.Name)
		h.String(f.Value)
	}
	h.Uint64(uint64(len(s.Tags)))
	for _, t := range s.Tags {
		h.String(t)
	}
	return h.Sum64()
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// add puts one row into the open batch of its status group, sending batches as they fill.
// The batch keeps the values of r made in from (its chunk's Arena, reset once the chunk is
// placed) in its own Arena.
func (p *pipeline) add(ctx context.Context, r mapping.Row, from *mapping.Arena, dup bool, emailHash, payloadHash, source uint64) error {
	key := groupKey{r.Status, r.StatusMobile}
	if dup {
		// The same e-mail may be in an open batch (a duplicate under "last"): send that
		// batch first, so this row goes in a later request and wins.
		for _, b := range p.openByAge() {
			if slices.Contains(b.emails, emailHash) {
				if err := p.dispatch(ctx, b); err != nil {
					return err
				}
			}
		}
	}
	b := p.open[key]
	if b == nil {
		b = p.newBatch(key, r.Ordinal)
		p.open[key] = b
	}
	b.arena.Adopt(&r, from)
	b.rows = append(b.rows, r.Sub)
	b.ords = append(b.ords, r.Ordinal)
	b.lines = append(b.lines, r.Line)
	b.emails = append(b.emails, emailHash)
	b.payloads = append(b.payloads, payloadHash)
	b.sources = append(b.sources, source)
	b.maxOrd = r.Ordinal
	if len(b.rows) == sink.MaxBatchRows {
		return p.dispatch(ctx, b)
	}
	return nil
}

// newBatch returns an empty batch, reusing the arrays of a checkpointed one.
func (p *pipeline) newBatch(key groupKey, minOrd int64) *batch {
	if n := len(p.freeBatches); n > 0 {
		b := p.freeBatches[n-1]
		p.freeBatches = p.freeBatches[:n-1]
		b.arena.Reset()
		*b = batch{key: key, minOrd: minOrd, arena: b.arena, rows: b.rows[:0], ords: b.ords[:0], lines: b.lines[:0],
			emails: b.emails[:0], payloads: b.payloads[:0], sources: b.sources[:0]}
		return b
	}
	return &batch{key: key, minOrd: minOrd, rows: make([]sink.Subscriber, 0, sink.MaxBatchRows),
		ords: make([]int64, 0, sink.MaxBatchRows), lines: make([]int, 0, sink.MaxBatchRows),
		emails: make([]uint64, 0, sink.MaxBatchRows), payloads: make([]uint64, 0, sink.MaxBatchRows),
		sources: make([]uint64, 0, sink.MaxBatchRows)}
}

// openByAge returns the open batches, oldest first row first.
func (p *pipeline) openByAge() []*batch {
	if len(p.open) == 0 {
		return nil
	}
	bs := make([]*batch, 0, len(p.open))
	for _, b := range p.open {
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(a, b *batch) int { return cmpInt64(a.minOrd, b.minOrd) })
	return bs
}

// dispatch sends an open batch once the window has room and no e-mail of it is in a sent,
// unacknowledged batch.
func (p *pipeline) dispatch(ctx context.Context, b *batch) error {
	// b stays open (holding the checkpoint back) until it is sent.
	for {
		if p.firstErr != nil {
			return p.firstErr
		}
		conflict := false
		for _, e := range b.emails {
			if p.unacked[e] > 0 {
				conflict = true
				break
			}
		}
		if !conflict && len(p.window) < p.windowSize {
			break
		}
		if !conflict && p.nUnacked == 0 && p.pendingCommits == 0 {
			// The window is full of acknowledged batches whose checkpoint waits for rows of
			// a batch not sent yet: sending is the only way forward.
			break
		}
		if conflict && p.onConflictWait != nil {
			p.onConflictWait(p.seq + 1)
		}
		t0 := time.Now()
		err := p.waitEvent(ctx)
		p.waitWindow += time.Since(t0)
		if err != nil {
			return err
		}
	}
	delete(p.open, b.key)
	p.seq++
	b.seq = p.seq
	p.window = append(p.window, b)
	p.nUnacked++
	for _, e := range b.emails {
		p.unacked[e]++
	}
	opts := sink.BulkOptions{ListID: p.listID, Status: b.key.status, StatusMobile: b.key.statusMobile, Tag: p.tag}
	go func() {
		b.res, b.err = p.sender.InsertBatch(ctx, opts, b.rows)
		select {
		case p.results <- b:
		case <-p.done:
		}
	}()
	return nil
}

// waitEvent handles the next acknowledgement or finished checkpoint.
func (p *pipeline) waitEvent(ctx context.Context) error {
	select {
	case b := <-p.results:
		p.acked(ctx, b)
	case u := <-p.commitDone:
		p.committed(u)
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (p *pipeline) acked(ctx context.Context, b *batch) {
	p.nUnacked--
	for _, e := range b.emails {
		if p.unacked[e]--; p.unacked[e] <= 0 {
			delete(p.unacked, e)
		}
	}
	if b.err != nil {
		// The batch stays in the window unacknowledged: the checkpoint never passes it, and
		// the next attempt sends it again. Its requests were made all the same; a request the
		// service answered with a wait (Retry-After) is repeated once the job has waited.
		p.uncounted.Requests += int64(b.res.Requests)
		p.uncounted.Retries += int64(b.res.Retries)
		if ae := (*sink.APIError)(nil); errors.As(b.err, &ae) && ae.RetryAfter > 0 {
			p.uncounted.Retries++
		}
		if p.firstErr == nil {
			p.firstErr = b.err
		}
		return
	}
	b.acked = true
	p.advance(ctx)
}

func (p *pipeline) committed(u *commitUnit) {
	p.pendingCommits--
	if u.err != nil {
		if p.firstErr == nil {
			p.firstErr = u.err
		}
		if p.commitErr == nil {
			p.commitErr = u.err
		}
		return
	}
	p.window = slices.DeleteFunc(p.window, func(b *batch) bool { return b.committed && slices.Contains(u.batches, b) })
	for _, b := range u.batches {
		if len(p.freeBatches) < p.windowSize+2 {
			clear(b.rows[:cap(b.rows)]) // drop the strings the payloads point at
			p.freeBatches = append(p.freeBatches, b)
		}
	}
	if p.onCommit != nil {
		p.onCommit(u.cp.Delta)
	}
}

// watermark is the highest ordinal below which every row is done.
func (p *pipeline) watermark() int64 {
	w := p.lastRead
	hold := func(ord int64) {
		if ord-1 < w {
			w = ord - 1
		}
	}
	if p.unplacedMin > 0 {
		hold(p.unplacedMin)
	}
	for _, b := range p.open {
		hold(b.minOrd)
	}
	for _, b := range p.window {
		if !b.acked {
			hold(b.minOrd)
		}
	}
	return w
}

// advance hands the committer a checkpoint for everything newly done.
func (p *pipeline) advance(ctx context.Context) {
	if p.commitErr != nil {
		return
	}
	w := p.watermark()
	if w <= p.pos && p.uncounted == (state.Counts{}) {
		return
	}
	w = max(w, p.pos)
	u := &commitUnit{cp: state.Checkpoint{RunID: p.runID, Owner: p.owner, TTL: p.ttl, Position: w,
		BytesDone: p.bytes}}
	d := &u.cp.Delta
	*d = p.uncounted
	p.uncounted = state.Counts{}
	d.Read = w - p.pos
	for _, b := range p.window {
		if b.acked && !b.committed {
			p.countBatch(u, b, w)
		}
	}
	n := 0
	for n < len(p.outcomes) && p.outcomes[n].ord <= w {
		o := p.outcomes[n]
		*d = d.Add(o.counts())
		if o.refresh != nil {
			u.fps = append(u.fps, *o.refresh)
		}
		if o.reject != nil {
			u.cp.Rejects = append(u.cp.Rejects, *o.reject)
		}
		n++
	}
	p.outcomes = append(p.outcomes[:0], p.outcomes[n:]...)
	p.pos = w
	for p.pendingCommits >= maxPendingCommits {
		select {
		case cu := <-p.commitDone:
			p.committed(cu)
		case <-ctx.Done():
			return
		}
	}
	p.pendingCommits++
	p.commits <- u
}

// countBatch adds to u the rows of an acknowledged batch that the checkpoint w newly covers:
// sent, or refused (a reject), with their fingerprints; and, with its first rows counted, the
// batch itself and its requests.
//
// A batch is counted row by row, not whole: with several status groups, the checkpoint can
// pass some of an acknowledged batch's rows while a batch of another group holds it below the
// rest. An attempt that resumes from that checkpoint never reads those rows again, so this
// checkpoint is their only chance to be counted; the rows above it are sent and counted
// again by that attempt.
func (p *pipeline) countBatch(u *commitUnit, b *batch, w int64) {
	k, _ := slices.BinarySearch(b.ords, w+1) // the rows at or below w; ords ascend
	if k <= b.counted {
		return
	}
	d := &u.cp.Delta
	if b.counted == 0 {
		d.Batches++
		d.Requests += int64(b.res.Requests)
		d.Retries += int64(b.res.Retries)
	}
	rejects := b.res.Rejects // ordered by Index
	for i := b.counted; i < k; i++ {
		for b.rejAt < len(rejects) && rejects[b.rejAt].Index < i {
			b.rejAt++
		}
		if b.rejAt < len(rejects) && rejects[b.rejAt].Index == i {
			rr := rejects[b.rejAt]
			d.Rejected++
			u.cp.Rejects = append(u.cp.Rejects, state.Reject{Ordinal: b.ords[i], Line: b.lines[i],
				Sheet: p.sheet, Value: strings.Clone(rr.Email), Code: state.CodeRefused, Reason: rr.Reason})
			continue
		}
		d.Sent++
		u.fps = append(u.fps, state.Fingerprint{Email: b.emails[i], Payload: b.payloads[i], Source: b.sources[i]})
	}
	b.counted = k
	if k == len(b.ords) {
		b.committed = true
		u.batches = append(u.batches, b)
	}
}

// committer writes checkpoints in order, and saves the fingerprints of acknowledged rows
// every fpFlush rows and at the end.
func (p *pipeline) committer(ctx context.Context) error {
	base := context.WithoutCancel(ctx)
	saveFailed := false
	save := func() {
		if p.fps.Pending() == 0 || saveFailed {
			return
		}
		wctx, cancel := context.WithTimeout(base, commitTimeout)
		defer cancel()
		if err := p.store.SaveFingerprints(wctx, p.fps); err != nil {
			// Not fatal: a missing fingerprint only makes the next sync send the row again.
			p.log.WarnContext(ctx, "could not save delta fingerprints", slog.Any("error", err))
			saveFailed = true
		}
	}
	var units []*commitUnit
	for u := range p.commits {
		// Checkpoints queued meanwhile are written together: one transaction, the same
		// result as writing them one after the other.
		units = append(units[:0], u)
	more:
		for len(units) < maxPendingCommits {
			select {
			case next, ok := <-p.commits:
				if !ok {
					break more
				}
				units = append(units, next)
			default:
				break more
			}
		}
		cp := mergeCheckpoints(units)
		wctx, cancel := context.WithTimeout(base, commitTimeout)
		err := p.store.Checkpoint(wctx, cp)
		cancel()
		for _, u := range units {
			u.err = err
			if err == nil {
				for _, f := range u.fps {
					p.fps.Add(f)
				}
			}
		}
		if err == nil && p.fps.Pending() >= p.fpFlush {
			save()
		}
		for _, u := range units {
			select {
			case p.commitDone <- u:
			case <-p.done:
			}
		}
	}
	save()
	return nil
}

// mergeCheckpoints combines consecutive checkpoints into one.
func mergeCheckpoints(units []*commitUnit) state.Checkpoint {
	if len(units) == 1 {
		return units[0].cp
	}
	last := units[len(units)-1].cp
	cp := state.Checkpoint{RunID: last.RunID, Owner: last.Owner, TTL: last.TTL, Position: last.Position,
		BytesDone: last.BytesDone}
	for _, u := range units {
		cp.Delta = cp.Delta.Add(u.cp.Delta)
		cp.Rejects = append(cp.Rejects, u.cp.Rejects...)
	}
	return cp
}

// setSourceHash prepares sourceHash for the mapping: the columns it maps (everything but
// ignored and unplaced ones), their names and the mapping's fingerprint. A delta run with
// fingerprints resolves records before mapping them (see resolve); it needs the e-mail
// column.
func (p *pipeline) setSourceHash(m *mapping.Mapper, header []string) {
	p.srcSeed = state.NewHasher()
	p.srcSeed.String("source v1")
	p.srcSeed.String(m.Fingerprint())
	p.srcCols, p.emailCol = p.srcCols[:0], -1
	for i, e := range m.Plan() {
		if e.Target == "" || e.Target == mapping.TargetIgnore {
			continue
		}
		if e.Target == sink.FieldEmail {
			p.emailCol = i
		}
		p.srcCols = append(p.srcCols, i)
		p.srcSeed.Uint64(uint64(i))
		p.srcSeed.String(header[i])
	}
	p.fast = p.delta && p.fps.Len() > 0 && p.emailCol >= 0
}
