package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/subsync/subsync/sources"
)

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
