package jobs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/subsync/subsync/mapping"
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

// stream opens the source, compiles the mapping against its header and the service's
// custom fields, and runs the pipeline from the run's checkpoint. It returns the source's
// watermark (SQL sources with a watermark column), "" otherwise.
func (rt *Runtime) stream(ctx context.Context, a *attempt, s streamSpec) (string, error) {
	if rt.sinkErr != nil {
		return "", permanent(fmt.Errorf("subscriber service client: %w", rt.sinkErr))
	}
	r, err := sources.Open(ctx, s.source)
	if err != nil {
		err = fmt.Errorf("source: %w", err)
		if !isSQL(s.source) {
			// A file that is missing, unreadable or not what it claims stays so: fail now.
			err = permanent(err)
		}
		return "", err
	}
	defer r.Close()

	var spec mapping.Spec
	if s.mapping != nil {
		spec = *s.mapping
	}
	spec, unplaced := spec.WithAuto(r.Header())
	fields, err := mapping.Resolve(ctx, rt.sink, spec)
	if err != nil {
		return "", fmt.Errorf("resolve custom fields: %w", err)
	}
	for _, f := range fields.Created() {
		a.log.InfoContext(ctx, "created custom field", slog.String("label", f.Label), slog.String("slot", f.Value))
	}
	m, err := mapping.Compile(spec, r.Header(), fields)
	if err != nil {
		return "", permanent(fmt.Errorf("mapping: %w", err))
	}
	if len(unplaced) > 0 || len(m.Unplaced()) > 0 {
		a.log.WarnContext(ctx, "columns not sent (neither mapped nor ignored)", slog.Any("columns", m.Unplaced()))
	}
	pr := r.Progress()
	if err := rt.store.SetTotals(ctx, a.run.ID, a.owner, pr.TotalRows, pr.TotalBytes); err != nil {
		return "", err
	}
	hasSuppressions, err := rt.store.HasSuppressions(ctx, s.listID)
	if err != nil {
		return "", err
	}
	fps := state.NewFingerprintSet(s.listID)
	if s.delta {
		if fps, err = rt.store.LoadFingerprints(ctx, s.listID); err != nil {
			return "", err
		}
	}
	kind := a.run.Kind
	p := &pipeline{
		store:            rt.store,
		sender:           rt.sink,
		log:              a.log,
		reader:           r,
		mapper:           m,
		dedupe:           m.NewDeduper(),
		mappingFP:        m.Fingerprint(),
		listID:           s.listID,
		tag:              s.tag,
		runID:            a.run.ID,
		owner:            a.owner,
		ttl:              rt.cfg.LeaseTTL,
		windowSize:       rt.cfg.BatchesInFlight,
		delta:            s.delta,
		checkSuppression: hasSuppressions,
		suppressionMode:  s.suppression,
		fps:              fps,
		fpFlush:          rt.cfg.FingerprintFlush,
		stopping:         rt.stoppingChan(),
		onCommit:         func(c state.Counts) { rt.metrics.addCounts(kind, c) },
	}
	if p.suppressionMode == "" {
		p.suppressionMode = SuppressionSkip
	}
	if err := p.run(ctx, a.run.Position); err != nil {
		return "", err
	}
	if w, ok := r.(interface{ Watermark() string }); ok {
		return w.Watermark(), nil
	}
	return "", nil
}
