package pipeline

import (
	"context"
	"errors"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/state"
)

// RowPlan is what a run would do with one source row (see DryRun).
type RowPlan struct {
	// Counts is what the row counts as; Sent is 1 for a row that would be sent (it may also
	// count as a duplicate or as suppressed, sent keeping its status).
	Counts state.Counts
	// Row is the row as it would be sent, nil when it would not be; valid during the call.
	Row *mapping.Row
	// Reject is the reason of a rejected row.
	Reject *state.Reject
	// Warnings are the values mapping dropped from the row (on_invalid = "drop").
	Warnings []state.Reject
	// Line and Email say which row was not sent; Status is a suppressed row's status.
	Line   int
	Email  string
	Status string
	// Sheet is the worksheet of the row's chunk ("" for other sources).
	Sheet string
}

// DryRun runs the producer and the filter (read, map, dedupe, suppression, delta) to the end
// of the source, and calls fn for every source row in source order with what a run would do
// with it. It sends and writes nothing. It returns the rows read. The Config must have DryRun
// set.
func (e *Engine) DryRun(ctx context.Context, fn func(RowPlan) error) (int64, error) {
	if !e.cfg.DryRun {
		return 0, errors.New("pipeline: DryRun needs Config.DryRun")
	}
	pctx, cancel := context.WithCancel(ctx)
	chunks := make(chan *chunk, engineChunks)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.prod.produce(pctx, 0, chunks)
	}()
	defer func() {
		cancel()
		for range chunks { // let the producer end
		}
		<-done
	}()
	var read int64
	for {
		c, ok := <-chunks
		switch {
		case !ok:
			if err := ctx.Err(); err != nil {
				return read, err
			}
			return read, errors.New("reading the source stopped")
		case c.err != nil:
			return read, c.err
		}
		if err := planChunk(c, fn); err != nil {
			return read, err
		}
		read = c.lastRead
		if c.eof {
			e.atEnd(c)
			return read, nil
		}
	}
}

// planChunk merges a chunk's rows to send and its outcomes (both in source order) into one
// RowPlan a row.
func planChunk(c *chunk, fn func(RowPlan) error) error {
	sheet := ""
	if len(c.rows) > 0 {
		sheet = c.rows[0].Sheet
	}
	rows, outs := c.rows, c.outcomes
	i, j := 0, 0
	for i < len(rows) || j < len(outs) {
		ord := int64(0)
		if i < len(rows) && (j >= len(outs) || rows[i].Ordinal <= outs[j].ord) {
			ord = rows[i].Ordinal
		} else {
			ord = outs[j].ord
		}
		rp := RowPlan{Sheet: sheet}
		for ; j < len(outs) && outs[j].ord == ord; j++ {
			o := &outs[j]
			rp.Counts = rp.Counts.Add(o.counts())
			switch {
			case o.kind == outWarning:
				rp.Warnings = append(rp.Warnings, *o.reject)
			case o.reject != nil:
				rp.Reject = o.reject
			case o.note == nil:
			case o.kind == outSuppressed:
				rp.Line, rp.Email, rp.Status = o.note.line, o.note.email, o.note.status
			case rp.Email == "":
				rp.Line, rp.Email = o.note.line, o.note.email
			}
		}
		if i < len(rows) && rows[i].Ordinal == ord {
			rp.Row = &rows[i]
			rp.Counts.Sent++
			i++
		}
		if err := fn(rp); err != nil {
			return err
		}
	}
	return nil
}
