package pipeline

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// The producer is the first stage: it reads the source into chunks of up to chunkRows
// records, maps them on a pool of goroutines (a chunk each at a time; mapping is the
// costliest step, and a Mapper may be used concurrently), takes them back in source order and
// has the filter dedupe and filter each. Chunks go to the mappers and come back from them
// round-robin, which keeps them in order. A chunk the engine placed comes back for reuse.
type producer struct {
	reader   sources.Reader
	mapper   *mapping.Mapper
	fps      *state.FingerprintSet
	workers  int
	filter   *filter
	stopping <-chan struct{}
	free     chan *chunk // placed chunks back from the engine
	made     int         // chunks made (at most chunksInFlight)
	done     []int64     // Config.Done

	fast     bool         // a delta run with fingerprints: records are resolved before mapping
	srcSeed  state.Hasher // the start of every sourceHash
	srcCols  []int        // the mapped columns, hashed by sourceHash
	allCols  bool         // srcCols is every column: a line's hash is that of its bytes
	delim    rune         // what joins the values sourceHash hashes: the CSV delimiter, or ','
	emailCol int          // the e-mail column
	track    bool         // a sync with a roster: every record's e-mail cell is read (chunk.read)
	// lines is the reader of a fast run whose source hands out simple records as lines
	// (sources.LineReader): such a record is resolved from its line, split only if mapped.
	lines sources.LineReader
	ahead lineBatch // read from lines, not yet taken
}

func newProducer(cfg Config, f *filter) *producer {
	p := &producer{reader: cfg.Reader, mapper: cfg.Mapper, fps: cfg.Fingerprints, workers: cfg.MapWorkers, filter: f,
		stopping: cfg.Stopping, free: make(chan *chunk, chunksInFlight(cfg.MapWorkers)), done: cfg.Done}
	p.delim = ','
	lines, isLines := cfg.Reader.(sources.LineReader)
	if isLines {
		p.delim = lines.Delimiter()
	}
	p.setSourceHash(cfg.Reader.Header())
	p.fast = cfg.Delta && cfg.Held == nil && cfg.Fingerprints.Len() > 0 && p.emailCol >= 0
	if p.fast && isLines && p.delim < utf8.RuneSelf {
		p.lines = lines
	}
	p.track = cfg.Roster != nil && p.emailCol >= 0
	return p
}

// chunksInFlight is how many chunks the stages hold at most at once, with workers mappers:
// the reader's, one waiting for and one held by each mapper, one mapped waiting for the
// filter, the filter's, engineChunks waiting for the engine, and the engine's. The producer
// keeps as many placed chunks for reuse, so that none is made twice.
func chunksInFlight(workers int) int { return 3*max(workers, 1) + 3 + engineChunks }

// recycle gives a placed chunk back for reuse (see chunk.release).
func (p *producer) recycle(c *chunk) {
	c.release()
	select {
	case p.free <- c:
	default:
	}
}

// produce reads the source from startPos into out until the end of the source (the last
// chunk says eof), a failure or a stop (a last chunk carries the error), or ctx's end (it
// closes out without either).
func (p *producer) produce(ctx context.Context, startPos int64, out chan<- *chunk) {
	defer close(out)
	defer p.filter.close(ctx)
	mctx, cancel := context.WithCancel(ctx)
	n := p.workers
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
			if err := p.filter.run(ctx, c); err != nil {
				c = &chunk{err: err}
			}
		}
		last := c.err != nil || c.eof // c is the engine's once sent
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

// read reads the source from startPos into chunks of up to chunkRows records, and hands them
// to the mappers in turn (out[k%len(out)] gets the k-th). Records done before a restart (at
// or below startPos, or in Config.Done) go in the chunk too: the mappers map them for their
// e-mails, which the deduper only observes.
func (p *producer) read(ctx context.Context, startPos int64, out []chan *chunk) {
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
	c := p.next(startPos)
	var before int64 // records at or below startPos read again
	done := p.done
	for {
		if len(done) == 0 && p.takeAhead(c, startPos) {
			// Records read ahead taken at once, as the default case below takes them.
		} else {
			rec, line, rowErr, err := p.nextRecord(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				emit(&chunk{err: err})
				return
			}
			done = p.place(c, rec, line, rowErr, startPos, done, &before)
		}
		if len(c.recs)+len(c.before)+len(c.outcomes) >= chunkRows {
			c.bytes = p.reader.Progress().Bytes
			lastRead := c.lastRead // c is the next stage's once sent (and recycled after)
			if !emit(c) {
				return
			}
			c = p.next(lastRead)
		}
	}
	c.bytes = p.reader.Progress().Bytes
	c.eof = true
	c.gap = before < startPos
	if t, ok := p.reader.(sources.Truncated); ok {
		c.cut = t.Truncated()
	}
	emit(c)
}

// takeAhead moves into c, at once, the records read ahead (producer.ahead) that are neither
// done before a restart nor row errors, as many as c has room for; it reports whether it
// took any. The caller has no Config.Done ordinals left.
func (p *producer) takeAhead(c *chunk, startPos int64) bool {
	b := &p.ahead
	j := b.n
	if b.rowErr != nil {
		j-- // the last is a row error: nextRecord hands it out
	}
	if b.i >= j || b.recs[b.i].Ordinal <= startPos {
		return false
	}
	k := min(j, b.i+chunkRows-(len(c.recs)+len(c.before)+len(c.outcomes)))
	if k <= b.i {
		return false
	}
	c.recs = append(c.recs, b.recs[b.i:k]...)
	c.lines = append(c.lines, b.lines[b.i:k]...)
	c.lastRead = b.recs[k-1].Ordinal
	b.i = k
	return true
}

// place puts a record read (with its line, if read as one) in the chunk: a record done
// before a restart to be mapped for its e-mail, a row error as its reject, any other to be
// mapped. It returns the Config.Done ordinals still ahead.
func (p *producer) place(c *chunk, rec sources.Record, line string, rowErr *sources.RowError, startPos int64,
	done []int64, before *int64) []int64 {
	if rec.Ordinal <= startPos {
		*before++
	}
	if rowErr != nil && p.track {
		c.read = append(c.read, state.EmailHash(p.rawEmail(rec, "")))
	}
	for len(done) > 0 && done[0] < rec.Ordinal {
		done = done[1:]
	}
	if line != "" && (rec.Ordinal <= startPos || len(done) > 0 && done[0] == rec.Ordinal) {
		rec.Values, line = sources.SplitLine(line, p.delim), "" // mapped for its e-mail
	}
	switch {
	case rec.Ordinal <= startPos:
		if rowErr == nil {
			c.before = append(c.before, rec)
		}
	case rowErr == nil && len(done) > 0 && done[0] == rec.Ordinal:
		c.lastRead = rec.Ordinal
		c.before = append(c.before, rec)
	case rowErr != nil:
		c.lastRead = rec.Ordinal
		c.reject(p.mapper.RejectRow(rec, rowErr), rec.Values)
	default:
		c.lastRead = rec.Ordinal
		c.recs = append(c.recs, rec)
		if p.lines != nil {
			c.lines = append(c.lines, line)
		}
	}
	return done
}

// next returns a chunk to fill, starting after lastRead: one given back, or a new one.
func (p *producer) next(lastRead int64) *chunk {
	select {
	case c := <-p.free:
		c.lastRead = lastRead
		return c
	default:
		p.made++
		return newChunk(lastRead)
	}
}

// mapChunk maps the chunk's records into rows and rejects. A delta run's records become
// candidates, mapped later only if they changed (see filter.resolve). Records done before a
// restart only give their e-mails, for the deduper.
func (p *producer) mapChunk(c *chunk) {
	for i := range c.before {
		c.observeOnly(p.mapper, &c.before[i])
	}
	c.delim = p.delim
	if p.track {
		for i := range c.before {
			c.read = append(c.read, state.EmailHash(p.rawEmail(c.before[i], "")))
		}
		for i := range c.recs {
			c.read = append(c.read, state.EmailHash(p.rawEmail(c.recs[i], c.line(i))))
		}
	}
	clear(c.before) // drop the records
	c.before = c.before[:0]
	if p.fast {
		// Each record is a candidate; resolve takes them from recs.
		for i := range c.recs {
			rec := &c.recs[i]
			line := c.line(i)
			email := state.NormaliseEmail(p.rawEmail(*rec, line))
			c.candKeys = append(c.candKeys, state.NormalisedEmailHash(email))
			c.cands = append(c.cands, cand{email: email, src: p.sourceHash(*rec, line, &c.joined)})
		}
		p.lookup(c)
		return
	}
	for i := range c.recs {
		rec := &c.recs[i]
		if c.mapRow(p.mapper, rec) != nil {
			c.sources = append(c.sources, p.sourceHash(*rec, "", &c.joined))
			c.vals = append(c.vals, rec.Values)
		}
	}
	clear(c.recs)
	clear(c.lines)
	c.recs, c.lines = c.recs[:0], c.lines[:0]
}

// lookup finds the fingerprints stored for the chunk's candidates, on the mapper's goroutine
// (FingerprintSet.Lookup reads only what was loaded), so that filter.resolve, which runs on
// one goroutine for all chunks, is left with what must be done in order. A failed read of
// fingerprints on file fails the chunk, and with it the run.
func (p *producer) lookup(c *chunk) {
	n := len(c.candKeys)
	c.candFPs = slices.Grow(c.candFPs[:0], n)[:n]
	c.candHit = slices.Grow(c.candHit[:0], n)[:n]
	c.candIdx = slices.Grow(c.candIdx[:0], n)[:n]
	if err := p.fps.LookupBatch(c.candKeys, c.candFPs, c.candHit, c.candIdx); err != nil {
		c.err = err
	}
}
