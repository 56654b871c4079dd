package jobs

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// Actions of a dry run's plan: what the run would do with one source row.
const (
	// PlanSend: the row would be sent (with PlanRow.Status as bulkinsert's status form).
	PlanSend = "send"
	// PlanUnchanged: the row's payload is what was last acknowledged for its e-mail.
	PlanUnchanged = "unchanged"
	// PlanSuppressed: the person unsubscribed or bounced (PlanRow.Status says which) and the
	// policy is to skip.
	PlanSuppressed = "suppressed"
	// PlanDuplicate: an earlier row has the e-mail and the duplicate policy is "first".
	PlanDuplicate = "duplicate"
	// PlanRejected: the row is invalid (PlanRow.Code and Reason say why).
	PlanRejected = "rejected"
)

// PlanRow is what a dry run would do with one source row.
type PlanRow struct {
	Line   int
	Sheet  string
	Email  string // as it would be sent; empty for a rejected row
	Action string // PlanSend, PlanUnchanged, PlanSuppressed, PlanDuplicate or PlanRejected
	// Status and StatusMobile are the status form the row would be sent with ("" = none); for
	// a suppressed row, Status is the suppressed status (unsubscribed or bounce).
	Status       string
	StatusMobile string
	// Code, Column and Value of a rejected row; Reason explains a rejected row, and notes a
	// sent row that is a duplicate (its values win) or suppressed (sent keeping its status).
	Code   string
	Column string
	Value  string
	Reason string
}

// Plan sums up a dry run. Counts are what the run would record: Sent is the rows it would
// send, and Batches and Requests stay zero. The service may still refuse a row a dry run
// cannot judge (a 422 on the real run).
type Plan struct {
	Counts state.Counts
	// ByStatus counts the rows to send per status form ("" = sent without a status).
	ByStatus map[string]int64
	// RejectsByCode counts the rejected rows per code.
	RejectsByCode map[string]int64
}

// PlanSync is a dry run of the named sync: it reads the source, maps, dedupes and filters it
// against the suppression list and (unless full) the delta fingerprints, exactly as the sync
// would, and calls row (if not nil) for every source row, in source order. It sends nothing,
// creates no custom field, and writes nothing to the database; it reads the service (the
// list, the custom fields). An incremental SQL source reads from its watermark unless full.
func (rt *Runtime) PlanSync(ctx context.Context, name string, full bool, row func(PlanRow) error) (Plan, error) {
	spec, ok := rt.cfg.sync(name)
	if !ok {
		return Plan{}, fmt.Errorf("sync %q is not in the configuration", name)
	}
	src := spec.Source
	if src.WatermarkColumn != "" && isSQL(src) && !full {
		wm, err := rt.store.Watermark(ctx, "sync:"+spec.Name)
		if err != nil {
			return Plan{}, err
		}
		src.Watermark = wm
	}
	return rt.plan(ctx, streamSpec{source: src, listID: spec.ListID, mapping: spec.Mapping,
		suppression: spec.Suppression, delta: !full}, row)
}

// PlanImport is a dry run of an import (see PlanSync): a file is read where it is (never
// staged), or the named source of the configuration. Imports send every row: no delta.
func (rt *Runtime) PlanImport(ctx context.Context, args ImportArgs, row func(PlanRow) error) (Plan, error) {
	if args.ListID <= 0 {
		return Plan{}, fmt.Errorf("import: a list id is required")
	}
	if (args.Path == "") == (args.Source == "") {
		return Plan{}, fmt.Errorf("import: give either a file or a source name")
	}
	switch args.Suppression {
	case "":
		args.Suppression = SuppressionSkip
	case SuppressionSkip, SuppressionUpdateKeepStatus:
	default:
		return Plan{}, fmt.Errorf("import: suppression %q: want %q or %q", args.Suppression, SuppressionSkip, SuppressionUpdateKeepStatus)
	}
	src := sources.Config{Kind: args.Format, Path: args.Path, Encoding: args.Encoding, Delimiter: args.Delimiter,
		Sheet: args.Sheet, SheetIndex: args.SheetIndex, HeaderRow: args.HeaderRow}
	if args.Source != "" {
		var ok bool
		if src, ok = rt.cfg.Sources[args.Source]; !ok {
			return Plan{}, fmt.Errorf("import: source %q is not in the configuration", args.Source)
		}
	}
	return rt.plan(ctx, streamSpec{source: src, listID: args.ListID, mapping: args.Mapping, tag: args.Tag,
		suppression: args.Suppression}, row)
}

// plan runs the producer of a pipeline (read, map, dedupe, filter) to the end of the source
// and turns its chunks into plan rows.
func (rt *Runtime) plan(ctx context.Context, s streamSpec, row func(PlanRow) error) (Plan, error) {
	p, r, err := rt.prepare(ctx, rt.log, s, true)
	if err != nil {
		return Plan{}, err
	}
	defer r.Close()
	pctx, cancel := context.WithCancel(ctx)
	chunks := make(chan *chunk, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.produce(pctx, 0, chunks)
	}()
	defer func() {
		cancel()
		for range chunks { // let the producer end
		}
		<-done
	}()
	pl := Plan{ByStatus: map[string]int64{}, RejectsByCode: map[string]int64{}}
	emit := func(pr PlanRow) error {
		if row == nil {
			return nil
		}
		return row(pr)
	}
	for {
		c, ok := <-chunks
		if !ok {
			if err := ctx.Err(); err != nil {
				return pl, err
			}
			return pl, fmt.Errorf("reading the source stopped")
		}
		if c.err != nil {
			return pl, c.err
		}
		if err := planChunk(c, p.sheetOf(c), &pl, emit); err != nil {
			return pl, err
		}
		pl.Counts.Read = c.lastRead
		if c.eof {
			return pl, nil
		}
	}
}

// sheetOf is the worksheet of a chunk's rows ("" for other sources).
func (p *pipeline) sheetOf(c *chunk) string {
	if len(c.rows) > 0 {
		return c.rows[0].Sheet
	}
	return ""
}

// planChunk merges a chunk's rows to send and its outcomes (both in source order) into plan
// rows, and adds them up.
func planChunk(c *chunk, sheet string, pl *Plan, emit func(PlanRow) error) error {
	rows, outs := c.rows, c.outcomes
	i, j := 0, 0
	for i < len(rows) || j < len(outs) {
		var ord int64
		switch {
		case i < len(rows) && (j >= len(outs) || rows[i].Ordinal <= outs[j].ord):
			ord = rows[i].Ordinal
		default:
			ord = outs[j].ord
		}
		var counts state.Counts
		var pr PlanRow
		k := j
		for k < len(outs) && outs[k].ord == ord {
			o := &outs[k]
			counts = counts.Add(o.counts())
			switch {
			case o.reject != nil:
				pr.Line, pr.Sheet, pr.Code, pr.Column, pr.Value, pr.Reason =
					o.reject.Line, o.reject.Sheet, o.reject.Code, o.reject.Column, o.reject.Value, o.reject.Reason
			case o.note == nil:
			case o.kind == outSuppressed:
				pr.Line, pr.Email, pr.Status = o.note.line, o.note.email, o.note.status
			case pr.Email == "":
				pr.Line, pr.Email = o.note.line, o.note.email
			}
			k++
		}
		j = k
		sheetOf := sheet
		switch {
		case i < len(rows) && rows[i].Ordinal == ord:
			r := rows[i]
			i++
			counts.Sent++
			pr = PlanRow{Line: r.Line, Sheet: r.Sheet, Email: r.Sub.Email, Action: PlanSend, Status: r.Status,
				StatusMobile: r.StatusMobile}
			switch {
			case counts.Suppressed > 0:
				pr.Reason = "suppressed (" + r.Status + "): sent keeping that status"
			case counts.Duplicates > 0:
				pr.Reason = "duplicate e-mail: sent after the earlier row, so its values win"
			}
			pl.ByStatus[r.Status]++
		case counts.Rejected > 0:
			pr.Action = PlanRejected
			pl.RejectsByCode[pr.Code]++
		case counts.Suppressed > 0:
			pr.Action = PlanSuppressed
		case counts.Unchanged > 0:
			pr.Action = PlanUnchanged
		default:
			pr.Action = PlanDuplicate
			pr.Reason = "duplicate e-mail: an earlier row was sent"
		}
		if pr.Sheet == "" {
			pr.Sheet = sheetOf
		}
		pl.Counts = pl.Counts.Add(counts)
		if err := emit(pr); err != nil {
			return err
		}
	}
	return nil
}

// PlanCSVHeader is the header row of a plan written by PlanCSV.
var PlanCSVHeader = []string{"line", "sheet", "email", "action", "status", "status_mobile", "code", "column", "value", "reason"}

// PlanCSV writes plan rows as CSV, after a header row (PlanCSVHeader). Cells a spreadsheet
// would read as a formula are neutralised with a leading quote (state.NeutraliseCell).
type PlanCSV struct {
	w      *csv.Writer
	header bool
}

// NewPlanCSV returns a PlanCSV writing to w.
func NewPlanCSV(w io.Writer) *PlanCSV { return &PlanCSV{w: csv.NewWriter(w)} }

// Write writes one plan row (and the header before the first).
func (p *PlanCSV) Write(r PlanRow) error {
	if !p.header {
		p.header = true
		if err := p.w.Write(PlanCSVHeader); err != nil {
			return fmt.Errorf("write plan csv: %w", err)
		}
	}
	rec := []string{strconv.Itoa(r.Line), r.Sheet, r.Email, r.Action, r.Status, r.StatusMobile, r.Code, r.Column, r.Value, r.Reason}
	for i := range rec {
		rec[i] = state.NeutraliseCell(rec[i])
	}
	if err := p.w.Write(rec); err != nil {
		return fmt.Errorf("write plan csv: %w", err)
	}
	return nil
}

// Flush writes the header if no row came, and flushes what is buffered.
func (p *PlanCSV) Flush() error {
	if !p.header {
		p.header = true
		if err := p.w.Write(PlanCSVHeader); err != nil {
			return fmt.Errorf("write plan csv: %w", err)
		}
	}
	p.w.Flush()
	if err := p.w.Error(); err != nil {
		return fmt.Errorf("write plan csv: %w", err)
	}
	return nil
}
