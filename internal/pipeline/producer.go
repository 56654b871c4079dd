package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
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

// setSourceHash prepares sourceHash for the mapping: the columns it maps (everything but
// ignored and unplaced ones), their names, the delimiter and the mapping's fingerprint. A
// delta run with fingerprints resolves records before mapping them (see filter.resolve); it
// needs the e-mail column.
func (p *producer) setSourceHash(header []string) {
	p.srcSeed = state.NewHasher()
	p.srcSeed.String("source v3")
	p.srcSeed.Uint64(uint64(p.delim))
	p.srcSeed.String(p.mapper.Fingerprint())
	p.srcCols, p.emailCol = p.srcCols[:0], -1
	for i, e := range p.mapper.Plan() {
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
	p.allCols = len(p.srcCols) == len(header)
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

// nextRecord reads the next record, a simple one of a LineReader as its line (see
// producer.lines): rowErr is set for a record to reject; err is io.EOF at the end, or
// another error that ends the run (ErrInterrupted on a stop).
func (p *producer) nextRecord(ctx context.Context) (rec sources.Record, line string, rowErr *sources.RowError, err error) {
	b := &p.ahead
	if b.i == b.n {
		select {
		case <-p.stopping:
			return sources.Record{}, "", nil, ErrInterrupted
		default:
		}
	}
	switch {
	case p.lines == nil:
		rec, err = p.reader.Next(ctx)
	case b.i < b.n:
		rec, line, err = b.pop()
	default:
		if b.recs == nil {
			b.recs, b.lines = make([]sources.Record, readAhead), make([]string, readAhead)
		}
		n, rerr := p.lines.NextLines(ctx, b.recs, b.lines)
		b.i, b.n, b.rowErr = 0, n, rerr // rerr: the last record's row error, if n > 0
		if n == 0 {
			err = rerr
		} else {
			rec, line, err = b.pop()
		}
	}
	if err == nil {
		return rec, line, nil, nil
	}
	// Only now: the target of errors.As escapes to the heap, an allocation a record.
	var re *sources.RowError
	switch {
	case errors.Is(err, io.EOF):
		return rec, "", nil, err
	case errors.As(err, &re):
		return rec, "", re, nil
	case ctx.Err() != nil:
		return rec, "", nil, ctx.Err()
	}
	return rec, "", nil, fmt.Errorf("read source: %w", err)
}

// readAhead is how many records a producer reads at a time from a LineReader.
const readAhead = 512

// lineBatch is the records a producer read ahead from a LineReader (NextLines).
type lineBatch struct {
	recs   []sources.Record
	lines  []string
	i, n   int   // recs[i:n] are still to be taken
	rowErr error // the row error of the last record, if any
}

// pop takes the next record read ahead.
func (b *lineBatch) pop() (sources.Record, string, error) {
	rec, line := b.recs[b.i], b.lines[b.i] // overwritten by the next NextLines
	b.i++
	if b.i == b.n && b.rowErr != nil {
		return rec, line, b.rowErr
	}
	return rec, line, nil
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
// one goroutine for all chunks, is left with what must be done in order.
func (p *producer) lookup(c *chunk) {
	n := len(c.candKeys)
	c.candFPs = slices.Grow(c.candFPs[:0], n)[:n]
	c.candHit = slices.Grow(c.candHit[:0], n)[:n]
	c.candIdx = slices.Grow(c.candIdx[:0], n)[:n]
	p.fps.LookupBatch(c.candKeys, c.candFPs, c.candHit, c.candIdx)
}

// sourceHash is the hash of a record's mapped columns (with the mapping's fingerprint, the
// columns' names and the delimiter): two records with the same hash map to the same payload.
// Never 0. It hashes the values joined by the delimiter, so a simple line of a CSV file
// (see producer.lines) that maps every column hashes as its bytes, unsplit, and one that
// does not as the bytes of its mapped fields; the values of a record read as values hash
// alike. Values that hold the delimiter could be joined in more than one way: they are
// hashed one by one instead, with their lengths. scratch is the caller's buffer.
func (p *producer) sourceHash(rec sources.Record, line string, scratch *[]byte) uint64 {
	if line != "" && p.allCols {
		return p.joinedHash(xxhash.Sum64String(line))
	}
	d := byte(p.delim)
	buf := (*scratch)[:0]
	if line != "" {
		col, k := 0, 0
		for k < len(p.srcCols) {
			end := strings.IndexByte(line, d)
			if end < 0 {
				end = len(line)
			}
			if col == p.srcCols[k] {
				if k > 0 {
					buf = append(buf, d)
				}
				buf = append(buf, line[:end]...)
				k++
			}
			if end == len(line) {
				break
			}
			line, col = line[end+1:], col+1
		}
	} else {
		for k, i := range p.srcCols {
			v := ""
			if i < len(rec.Values) {
				v = rec.Values[i]
			}
			if strings.IndexByte(v, d) >= 0 {
				return p.sourceHashParts(rec)
			}
			if k > 0 {
				buf = append(buf, d)
			}
			buf = append(buf, v...)
		}
	}
	*scratch = buf
	return p.joinedHash(xxhash.Sum64(buf))
}

// joinedHash is sourceHash of the mapped values joined, whose xxhash is x: a line's bytes
// are hashed 32 at a time (a tenth of a microsecond less a row than 8 at a time).
func (p *producer) joinedHash(x uint64) uint64 {
	h := p.srcSeed
	h.Uint64(x)
	return h.Sum64() | 1
}

// sourceHashParts is sourceHash for values that hold the delimiter.
func (p *producer) sourceHashParts(rec sources.Record) uint64 {
	h := p.srcSeed
	h.String("parts")
	for _, i := range p.srcCols {
		if i < len(rec.Values) {
			h.String(rec.Values[i])
		} else {
			h.String("")
		}
	}
	return h.Sum64() | 1
}

// rawEmail is the record's e-mail cell as read, from its line if it was read as one.
func (p *producer) rawEmail(rec sources.Record, line string) string {
	switch {
	case line != "":
		return sources.Field(line, p.delim, p.emailCol)
	case p.emailCol >= 0 && p.emailCol < len(rec.Values):
		return rec.Values[p.emailCol]
	}
	return ""
}
