package jobs

import (
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/internal/rejectfile"
	"github.com/subsync/subsync/sink"
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
	// PlanRemove: not a source row but a person the sync would unsubscribe at its end
	// (PlanRow.Reason says why: they left the source, or their key came with a new address).
	PlanRemove = "remove"
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
	// Counts.Removed is how many people the run would unsubscribe at its end (old addresses
	// of moved keys, and people who left the source); RemovalsStopped says why those who left
	// would not be (the guard, an incremental read), "" when they would.
	RemovalsStopped string
}

// PlanSync is a dry run of the named sync: it reads the source, maps, dedupes and filters it
// against the suppression list and (unless full) the delta fingerprints, exactly as the sync
// would, and calls row (if not nil) for every source row, in source order. It sends nothing,
// creates no custom field, and writes nothing to the database; it reads the service (the
// list, the custom fields). An incremental SQL source reads from its watermark unless full.
func (rt *Runtime) PlanSync(ctx context.Context, name string, full bool, row func(PlanRow) error) (Plan, error) {
	return rt.PlanSyncArgs(ctx, SyncArgs{Name: name, Full: full}, row)
}

// PlanSyncArgs is PlanSync with every argument a run of the sync takes (AllowRemovals: the
// guard does not stop the removals it lists).
func (rt *Runtime) PlanSyncArgs(ctx context.Context, args SyncArgs, row func(PlanRow) error) (Plan, error) {
	name, full := args.Name, args.Full
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
		suppression: spec.Suppression, delta: !full, sync: spec.Name, removed: spec.Removed,
		maxRemovals: spec.MaxRemovals, allowRemovals: args.AllowRemovals}, row)
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
	if err := pipeline.CheckSuppression(args.Suppression); err != nil {
		return Plan{}, fmt.Errorf("import: suppression %q: %w", args.Suppression, err)
	}
	args.Suppression = cmp.Or(args.Suppression, pipeline.SuppressionSkip)
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

// plan runs the producer and filter of a pipeline (read, map, dedupe, filter) to the end of
// the source and adds up what the run would do with each row.
func (rt *Runtime) plan(ctx context.Context, s streamSpec, row func(PlanRow) error) (Plan, error) {
	cfg, r, err := rt.prepare(ctx, rt.log, s, true)
	if err != nil {
		return Plan{}, err
	}
	defer r.Close()
	defer cfg.Fingerprints.Close() // its temporary file, if any
	p, err := pipeline.New(cfg)
	if err != nil {
		return Plan{}, err
	}
	pl := Plan{ByStatus: map[string]int64{}, RejectsByCode: map[string]int64{}}
	read, err := p.DryRun(ctx, func(rp pipeline.RowPlan) error {
		pr := planRow(rp, &pl)
		pl.Counts = pl.Counts.Add(rp.Counts)
		if row == nil {
			return nil
		}
		return row(pr)
	})
	pl.Counts.Read = read
	if err != nil || cfg.Roster == nil {
		return pl, err
	}
	return pl, rt.planRemovalRows(ctx, p, s, &pl, row)
}

// planRemovalRows adds to a sync's plan whom it would unsubscribe at its end, one plan row
// each.
func (rt *Runtime) planRemovalRows(ctx context.Context, p *pipeline.Engine, s streamSpec, pl *Plan, row func(PlanRow) error) error {
	rp, err := rt.planRemovals(ctx, p, s)
	if err != nil {
		return err
	}
	pl.RemovalsStopped = rp.why
	moved, absent := rp.Moved, rp.Absent
	if rp.stopped != nil {
		pl.RemovalsStopped, moved, absent = rp.stopped.Error(), nil, nil
	}
	pl.Counts.Removed = int64(len(moved) + len(absent))
	if row == nil {
		return nil
	}
	for _, list := range []struct {
		emails []string
		reason string
	}{{moved, "the key came with a new address: the old one is unsubscribed"},
		{absent, "not in the source any more: unsubscribed (from every list, one status per subscriber)"}} {
		for _, e := range list.emails {
			if err := row(PlanRow{Email: e, Action: PlanRemove, Status: sink.StatusUnsubscribed, Reason: list.reason}); err != nil {
				return err
			}
		}
	}
	return nil
}

// planRow is the plan row of what a run would do with a row, counted in pl's sums by status
// and reject code.
func planRow(rp pipeline.RowPlan, pl *Plan) PlanRow {
	pr := PlanRow{Line: rp.Line, Email: rp.Email}
	if rj := rp.Reject; rj != nil {
		pr = PlanRow{Line: rj.Line, Sheet: rj.Sheet, Code: rj.Code, Column: rj.Column, Value: rj.Value, Reason: rj.Reason}
	}
	if rp.Counts.Suppressed > 0 && rp.Row == nil {
		pr.Status = rp.Status
	}
	switch c := rp.Counts; {
	case rp.Row != nil:
		r := rp.Row
		pr = PlanRow{Line: r.Line, Sheet: r.Sheet, Email: r.Sub.Email, Action: PlanSend, Status: r.Status,
			StatusMobile: r.StatusMobile}
		switch {
		case c.Suppressed > 0:
			pr.Reason = "suppressed (" + r.Status + "): sent keeping that status"
		case c.Duplicates > 0:
			pr.Reason = "duplicate e-mail: sent after the earlier row, so its values win"
		}
		pl.ByStatus[r.Status]++
	case c.Rejected > 0:
		pr.Action = PlanRejected
		pl.RejectsByCode[pr.Code]++
	case c.Suppressed > 0:
		pr.Action = PlanSuppressed
	case c.Unchanged > 0:
		pr.Action = PlanUnchanged
	default:
		pr.Action = PlanDuplicate
		pr.Reason = "duplicate e-mail: an earlier row was sent"
	}
	if pr.Sheet == "" {
		pr.Sheet = rp.Sheet
	}
	return pr
}

// PlanCSVHeader is the header row of a plan written by PlanCSV.
var PlanCSVHeader = []string{"line", "sheet", "email", "action", "status", "status_mobile", "code", "column", "value", "reason"}

// PlanCSV writes plan rows as CSV, after a header row (PlanCSVHeader). Cells a spreadsheet
// would read as a formula are neutralised with a leading quote (rejectfile.Neutralise).
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
		rec[i] = rejectfile.Neutralise(rec[i])
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
