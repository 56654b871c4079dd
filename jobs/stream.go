package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"slices"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// streamSpec is what one import or sync run streams.
type streamSpec struct {
	source      sources.Config
	listID      int64
	mapping     *mapping.Spec // nil = by column names
	tag         string
	suppression string
	delta       bool
}

// checkList fails at once, permanently, when the list does not exist (GET
// /subscriberlists/{id} answers 404): every row would be refused otherwise.
func (rt *Runtime) checkList(ctx context.Context, id int64) error {
	if _, err := rt.sink.List(ctx, id); err != nil {
		var ae *sink.APIError
		if errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound {
			return permanent(fmt.Errorf("list %d does not exist", id))
		}
		return fmt.Errorf("check list %d: %w", id, err)
	}
	return nil
}

// prepare opens the source, checks the list, compiles the mapping against its header and the
// service's custom fields (creating missing ones unless dryRun), and loads the suppression
// list and, for a delta run, the fingerprints: everything a run or a dry run needs before the
// first row. The caller closes the returned reader.
func (rt *Runtime) prepare(ctx context.Context, log *slog.Logger, s streamSpec, dryRun bool) (*pipeline, sources.Reader, error) {
	if rt.sinkErr != nil {
		return nil, nil, permanent(fmt.Errorf("subscriber service client: %w", rt.sinkErr))
	}
	r, err := sources.Open(ctx, s.source)
	if err != nil {
		err = fmt.Errorf("source: %w", err)
		if !isSQL(s.source) {
			// A file that is missing, unreadable or not what it claims stays so: fail now.
			err = permanent(err)
		}
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = r.Close()
		}
	}()
	if err := rt.checkList(ctx, s.listID); err != nil {
		return nil, nil, err
	}

	var spec mapping.Spec
	if s.mapping != nil {
		spec = *s.mapping
	}
	var sample [][]string
	if len(spec.Columns) == 0 && mapping.Ambiguous(r.Header()) && !isSQL(s.source) {
		if sample, err = SampleRows(ctx, s.source, autoSampleRows); err != nil {
			return nil, nil, permanent(fmt.Errorf("source: %w", err))
		}
	}
	spec, unplaced, choices := spec.WithAutoSampled(r.Header(), sample)
	for _, c := range choices {
		log.InfoContext(ctx, "column chosen by its data", slog.String("target", c.Target), slog.String("column", c.Column),
			slog.Any("alternatives", c.Alternatives))
	}
	resolve := mapping.Resolve
	if dryRun {
		resolve = mapping.ResolveDryRun
	}
	fields, err := resolve(ctx, rt.sink, spec)
	if err != nil {
		return nil, nil, fmt.Errorf("resolve custom fields: %w", err)
	}
	for _, f := range fields.Created() {
		log.InfoContext(ctx, "created custom field", slog.String("label", f.Label), slog.String("slot", f.Value))
	}
	m, err := mapping.Compile(spec, r.Header(), fields)
	if err != nil {
		return nil, nil, permanent(fmt.Errorf("mapping: %w", err))
	}
	if len(unplaced) > 0 || len(m.Unplaced()) > 0 {
		log.WarnContext(ctx, "columns not sent (neither mapped nor ignored)", slog.Any("columns", m.Unplaced()))
	}
	fps := state.NewFingerprintSet(s.listID)
	if s.delta {
		if fps, err = rt.store.LoadFingerprints(ctx, s.listID); err != nil {
			return nil, nil, err
		}
	}
	p := &pipeline{
		store:           rt.store,
		sender:          rt.sink,
		log:             log,
		reader:          r,
		mapper:          m,
		mapWorkers:      runtime.GOMAXPROCS(0),
		dedupe:          m.NewDeduper(),
		mappingFP:       m.Fingerprint(),
		listID:          s.listID,
		tag:             s.tag,
		ttl:             rt.cfg.LeaseTTL,
		windowSize:      rt.cfg.BatchesInFlight,
		delta:           s.delta,
		suppressionMode: s.suppression,
		fps:             fps,
		fpFlush:         rt.cfg.FingerprintFlush,
		plan:            dryRun,
	}
	if p.suppressionMode == "" {
		p.suppressionMode = SuppressionSkip
	}
	p.setSourceHash(m, r.Header())
	// Loaded now, so that a failure shows before the first row; re-read as it changes.
	if err := p.refreshSuppressions(ctx); err != nil {
		return nil, nil, err
	}
	ok = true
	return p, r, nil
}

// stream runs the pipeline of an import or sync run from the run's checkpoint. It returns the
// source's watermark (SQL sources with a watermark column), "" otherwise.
func (rt *Runtime) stream(ctx context.Context, a *attempt, s streamSpec) (string, error) {
	p, r, err := rt.prepare(ctx, a.log, s, false)
	if err != nil {
		return "", err
	}
	defer r.Close()
	pr := r.Progress()
	if err := rt.store.SetTotals(ctx, a.run.ID, a.owner, pr.TotalRows, pr.TotalBytes); err != nil {
		return "", err
	}
	kind := a.run.Kind
	p.runID, p.owner = a.run.ID, a.owner
	p.stopping = rt.stoppingChan()
	p.onCommit = func(c state.Counts) { rt.metrics.addCounts(kind, c) }
	if err := p.run(ctx, a.run.Position); err != nil {
		return "", err
	}
	if w, ok := r.(interface{ Watermark() string }); ok {
		return w.Watermark(), nil
	}
	return "", nil
}

// autoSampleRows is how many rows automatic mapping looks at to choose between columns.
const autoSampleRows = 200

// SampleRows reads the first n rows of a file source (opened on its own, then closed), for
// automatic mapping to see which columns hold data. Rows the source cannot read are skipped.
func SampleRows(ctx context.Context, cfg sources.Config, n int) ([][]string, error) {
	r, err := sources.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out [][]string
	for len(out) < n {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		var re *sources.RowError
		if errors.As(err, &re) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, slices.Clone(rec.Values))
	}
	return out, nil
}
