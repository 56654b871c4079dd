package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/subsync/subsync/internal/pipeline"
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
	// sync names the sync of a sync run ("" for an import); removed, maxRemovals and
	// allowRemovals are its removal settings (see SyncSpec and SyncArgs).
	sync          string
	removed       string
	maxRemovals   string
	allowRemovals bool
	// verify compares the rows with the service's list (pipeline.Held) instead of the
	// fingerprints.
	verify bool
	// fps are the fingerprints of a delta run, already loading (nil: prepare loads them).
	fps *background[*state.FingerprintSet]
	// opening is the source, already opening (nil: prepare opens it).
	opening *background[sources.Reader]
}

// sourceConfig is the source s reads, as opened.
func (s streamSpec) sourceConfig() sources.Config {
	src := s.source
	if src.IsHeader == nil {
		// A workbook without a sheet or header row given: the mapping finds them.
		src.IsHeader = HeaderMapsEmail(s.mapping)
	}
	return readStable(src, s.mapping)
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

// prepare opens the source, checks the list, learns its suppressions if it never did
// (learnList), compiles the mapping against its header and the service's custom fields
// (creating missing ones unless dryRun), and loads the suppression list and, for a delta run, the fingerprints: everything a run or a dry run needs before the
// first row. The caller closes the returned reader.
func (rt *Runtime) prepare(ctx context.Context, log *slog.Logger, s streamSpec, dryRun bool) (pipeline.Config, sources.Reader, error) {
	var cfg pipeline.Config
	if rt.sinkErr != nil {
		return cfg, nil, permanent(fmt.Errorf("subscriber service client: %w", rt.sinkErr))
	}
	ok := false
	load, release := rt.fingerprintLoad(ctx, s)
	defer func() { release(ok) }()
	r, err := s.open(ctx)
	if err != nil {
		return cfg, nil, err
	}
	defer func() {
		if !ok {
			_ = r.Close()
		}
	}()
	if err := rt.checkList(ctx, s.listID); err != nil {
		return cfg, nil, err
	}
	learnt, err := rt.learnList(ctx, log, s.listID, dryRun)
	if err != nil {
		return cfg, nil, err
	}
	m, err := rt.compileMapping(ctx, log, s, r.Header(), dryRun)
	if err != nil {
		return cfg, nil, err
	}
	fps := state.NewFingerprintSet(s.listID)
	var held *pipeline.Held
	if s.verify {
		if held, err = rt.readHeld(ctx, s.listID); err != nil {
			return cfg, nil, err
		}
		log.InfoContext(ctx, "read the list in the service to verify against it", slog.Int64("list_id", s.listID),
			slog.Int("subscribers", held.Len()))
	} else if load != nil {
		if fps, err = rt.waitFingerprints(ctx, log, s.listID, load); err != nil {
			return cfg, nil, err
		}
	}
	cfg = pipeline.Config{
		Reader:           r,
		Mapper:           m,
		Sender:           rt.sink,
		Store:            pipeline.StateStore(rt.store),
		Logger:           log,
		MapWorkers:       runtime.GOMAXPROCS(0),
		ListID:           s.listID,
		Tag:              s.tag,
		LeaseTTL:         rt.cfg.LeaseTTL,
		Window:           rt.cfg.BatchesInFlight,
		Delta:            s.delta && !s.verify,
		Held:             held,
		Suppression:      s.suppression,
		Fingerprints:     fps,
		FingerprintFlush: rt.cfg.FingerprintFlush,
		MemoryBudget:     rt.cfg.MemoryBudget,
		TempDir:          rt.tempDir(),
		DryRun:           dryRun,
	}
	if s.sync != "" && (s.removed == RemovedUnsubscribe || m.KeyColumn() != "") {
		if cfg.Roster, err = rt.store.LoadRoster(ctx, s.sync, s.listID); err != nil {
			return cfg, nil, err
		}
	}
	// The suppression list is loaded now, so that a failure shows before the first row; the
	// run re-reads it as it changes.
	if cfg.Suppressions, err = rt.store.LoadSuppressions(ctx, s.listID); err != nil {
		return cfg, nil, err
	}
	withLearnt(&cfg, learnt)
	ok = true
	return cfg, r, nil
}

// open opens the run's source (or waits for the opening begun in the background). A file
// that is missing, unreadable or not what it claims stays so: its error is permanent.
func (s streamSpec) open(ctx context.Context) (sources.Reader, error) {
	var r sources.Reader
	var err error
	if s.opening != nil {
		r, err = s.opening.wait(ctx)
	} else {
		r, err = sources.Open(ctx, s.sourceConfig())
	}
	if err != nil {
		err = fmt.Errorf("source: %w", err)
		if !isSQL(s.source) {
			err = permanent(err)
		}
		return nil, err
	}
	return r, nil
}

// compileMapping makes the run's mapping for the source's header: the spec completed by the
// automatic mapping and the columns' data (each choice logged), the service's custom fields
// resolved (missing ones created unless dryRun), compiled.
func (rt *Runtime) compileMapping(ctx context.Context, log *slog.Logger, s streamSpec, header []string, dryRun bool) (*mapping.Mapper, error) {
	var spec mapping.Spec
	if s.mapping != nil {
		spec = *s.mapping
	}
	prep, err := PrepareSpec(ctx, spec, s.sourceConfig(), header)
	if err != nil {
		return nil, permanent(fmt.Errorf("source: %w", err))
	}
	spec, unplaced := prep.Spec, prep.Unplaced
	for _, c := range prep.Choices {
		log.InfoContext(ctx, "column chosen by its data", slog.String("target", c.Target), slog.String("column", c.Column),
			slog.Any("alternatives", c.Alternatives))
	}
	for _, d := range prep.Dates {
		log.InfoContext(ctx, "date order of a column", slog.String("column", d.Column), slog.String("order", cmp.Or(d.Order, "undecided")),
			slog.String("reason", d.Reason))
	}
	resolve := mapping.Resolve
	if dryRun {
		resolve = mapping.ResolveDryRun
	}
	fields, err := resolve(ctx, rt.sink, spec)
	if err != nil {
		return nil, fmt.Errorf("resolve custom fields: %w", err)
	}
	for _, f := range fields.Created() {
		log.InfoContext(ctx, "created custom field", slog.String("label", f.Label), slog.String("slot", f.Value))
	}
	m, err := mapping.Compile(spec, header, fields)
	if err != nil {
		return nil, permanent(fmt.Errorf("mapping: %w", err))
	}
	if len(unplaced) > 0 || len(m.Unplaced()) > 0 {
		log.WarnContext(ctx, "columns not sent (neither mapped nor ignored)", slog.Any("columns", m.Unplaced()))
	}
	return m, nil
}

// stream runs the pipeline of an import or sync run from the run's checkpoint. It returns the
// source's watermark (SQL sources with a watermark column), "" otherwise.
func (rt *Runtime) stream(ctx context.Context, a *attempt, s streamSpec) (string, error) {
	cfg, r, err := rt.prepare(ctx, a.log, s, false)
	if err != nil {
		return "", err
	}
	defer r.Close()
	defer cfg.Fingerprints.Close() // its temporary file, if any
	pr := r.Progress()
	if err := rt.store.SetTotals(ctx, a.run.ID, a.owner, pr.TotalRows, pr.TotalBytes); err != nil {
		return "", err
	}
	if err := rt.recordSource(ctx, a, r, cfg.Mapper); err != nil {
		return "", err
	}
	kind, sync := a.run.Kind, syncLabel(a.run.Kind, a.run.Name)
	cfg.RunID, cfg.Owner = a.run.ID, a.owner
	// The batches an earlier attempt had acknowledged above the checkpoint are not sent again.
	if cfg.Done, err = rt.store.AckedAbove(ctx, a.run.ID, a.run.Position); err != nil {
		return "", err
	}
	cfg.Stopping = rt.stoppingChan()
	cfg.OnCommit = func(c state.Counts) { rt.metrics.addCounts(kind, sync, c) }
	p, err := pipeline.New(cfg)
	if err != nil {
		return "", err
	}
	if err := p.Run(sink.WithGate(ctx, a.leaseGate), a.run.Position); err != nil {
		return "", err
	}
	if err := rt.everyRowRefused(ctx, a); err != nil {
		return "", err
	}
	if cfg.Held != nil {
		a.warning = strings.TrimPrefix(a.warning+"; "+verifyNote(cfg.Held), "; ")
		a.log.InfoContext(ctx, "verified the list", slog.Int("held", cfg.Held.Len()),
			slog.Int64("missing", cfg.Held.Missing()), slog.Int64("differing", cfg.Held.Differing()))
	}
	if w, ok := r.(interface {
		Warnings() (int64, []sources.RowError)
	}); ok {
		if n, warnings := w.Warnings(); n > 0 {
			first := warnings[:min(len(warnings), 20)]
			lines := make([]int, 0, len(first))
			for _, rw := range first {
				lines = append(lines, rw.Line)
			}
			a.log.WarnContext(ctx, "values that were not valid UTF-8 were read as Windows-1252: check these lines",
				slog.Int64("values", n), slog.Any("lines", lines))
			a.warning = strayWarning(n, lines)
		}
	}
	if cfg.Roster != nil {
		if err := rt.remove(ctx, a, p, s); err != nil {
			return "", err
		}
	}
	if w, ok := r.(interface{ Watermark() string }); ok {
		return w.Watermark(), nil
	}
	return "", nil
}

// strayWarning is the run's summary of the values of a UTF-8 file that were not UTF-8 and
// were read as Windows-1252: how many, and the first lines they stood on.
func strayWarning(n int64, lines []int) string {
	what := "values that were not valid UTF-8 were"
	if n == 1 {
		what = "value that was not valid UTF-8 was"
	}
	at := make([]string, len(lines))
	for i, l := range lines {
		at[i] = strconv.Itoa(l)
	}
	more := ""
	if int64(len(lines)) < n {
		more = ", …"
	}
	where := "line"
	if n > 1 {
		where = "lines"
	}
	return fmt.Sprintf("%d %s read as Windows-1252 (stray_lines = \"reject\" rejects them instead): %s %s%s",
		n, what, where, strings.Join(at, ", "), more)
}

// HeaderMapsEmail returns what finds a workbook's sheet and header row when none is given
// (sources.Config.IsHeader): a row is the header when the mapping m (or, without columns or
// with m nil, the auto-mapping) maps one of its columns to the e-mail address.
func HeaderMapsEmail(m *mapping.Spec) func(header []string) bool {
	var spec mapping.Spec
	if m != nil {
		spec = *m
	}
	return func(header []string) bool {
		spec, _ := spec.WithAuto(header)
		for col, c := range spec.Columns {
			if c.To == sink.FieldEmail && slices.ContainsFunc(header, func(h string) bool { return strings.EqualFold(h, col) }) {
				return true
			}
		}
		return false
	}
}

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
