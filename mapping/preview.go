package mapping

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// DefaultPreviewRows is how many mapped rows a preview shows when PreviewOptions.Rows is 0.
const DefaultPreviewRows = 10

// maxHeldRejects bounds the rejects a preview holds back while it still collects the rows to
// show first; past it, the rows table is written with what it has and rejects stream.
const maxHeldRejects = 1000

// PreviewOptions control Preview.
type PreviewOptions struct {
	// Rows is how many mapped rows to show; DefaultPreviewRows when 0, none when negative.
	Rows int
	// JSON writes one JSON document (columns, constants, rows, rejects, stats) instead of text.
	JSON bool
	// MemoryBudget bounds the memory of the set of e-mails read (as a run's: Deduper.Bound),
	// which spills beyond it to a temporary file in TempDir (0: 32 MiB; "": os.TempDir()).
	MemoryBudget int64
	TempDir      string
}

// previewBudget is PreviewOptions.MemoryBudget's default, a worker's default budget.
const previewBudget = 32 << 20

// PreviewStats counts what a preview read.
type PreviewStats struct {
	Rows       int64            `json:"rows"`       // data rows read, unreadable ones included
	Mapped     int64            `json:"mapped"`     // rows that map to a payload; Rows = Mapped + Rejected + Filtered
	Rejected   int64            `json:"rejected"`   // rows rejected, by the mapping or as duplicates
	Duplicates int64            `json:"duplicates"` // rows whose e-mail address an earlier row had
	Filtered   int64            `json:"filtered"`   // rows the where expression left out (neither mapped nor rejected)
	ByCode     map[string]int64 `json:"by_code,omitempty"`
	// Dropped counts, by code, the invalid values on_invalid = "drop" would leave out of rows
	// that are sent (a run records each as a warning).
	Dropped  map[string]int64 `json:"dropped,omitempty"`
	Unplaced []string         `json:"unplaced,omitempty"` // columns neither mapped nor ignored
}

// Preview is the dry run behind `subsync preview`: it writes how the columns map, the first
// rows as they would be sent, and every reject with its reason, reading the whole source and
// sending nothing. Duplicates are found as a run would find them (by the mapping's policy).
//
// A mapping that does not fit the source is caught before, by Compile (*SpecError); Preview
// returns an error only when the source fails or w cannot be written, with the stats so far.
// Each reject is written once known; the rows table comes first, so rejects met before it is
// complete are held back (up to 1000).
func Preview(ctx context.Context, w io.Writer, r sources.Reader, m *Mapper, opts PreviewOptions) (PreviewStats, error) {
	bw := bufio.NewWriter(w)
	var out previewWriter = &textPreview{w: bw, tables: &trimWriter{w: bw}, m: m}
	if opts.JSON {
		out = &jsonPreview{w: bw, m: m}
	}
	stats, err := preview(ctx, r, m, opts, out)
	if out.err() == nil {
		if ferr := bw.Flush(); ferr != nil {
			return stats, fmt.Errorf("preview: write: %w", ferr)
		}
	}
	return stats, err
}

// A PreviewSink receives a preview as PreviewTo finds it: the first rows as they would be
// sent (once, before any reject), then every reject, in the order met. `subsync preview`'s
// text and JSON are two; the import page is another.
type PreviewSink interface {
	PreviewRows(rows []Row)
	PreviewReject(r Reject)
}

// PreviewTo is Preview giving what it finds to sink rather than writing it: the same dry run,
// reading the whole source, sending nothing.
func PreviewTo(ctx context.Context, r sources.Reader, m *Mapper, opts PreviewOptions, sink PreviewSink) (PreviewStats, error) {
	return preview(ctx, r, m, opts, sinkWriter{sink})
}

// sinkWriter is a PreviewSink as Preview's writers are driven.
type sinkWriter struct{ s PreviewSink }

func (w sinkWriter) start()           {}
func (w sinkWriter) rows(rows []Row)  { w.s.PreviewRows(rows) }
func (w sinkWriter) reject(r Reject)  { w.s.PreviewReject(r) }
func (w sinkWriter) end(PreviewStats) {}
func (w sinkWriter) err() error       { return nil }

func preview(ctx context.Context, r sources.Reader, m *Mapper, opts PreviewOptions, out previewWriter) (PreviewStats, error) {
	want := opts.Rows
	if want == 0 {
		want = DefaultPreviewRows
	}
	want = max(want, 0)
	stats := PreviewStats{ByCode: map[string]int64{}, Unplaced: m.Unplaced()}
	var dropped []Reject
	dedupe := m.NewDeduper().Bound(cmp.Or(opts.MemoryBudget, previewBudget), opts.TempDir)
	defer dedupe.Close()
	var rows []Row
	var held []Reject
	tableDone := false
	finishTable := func() {
		if !tableDone {
			tableDone = true
			out.rows(rows)
			for _, rej := range held {
				out.reject(rej)
			}
			held = nil
		}
	}
	addReject := func(rej Reject) {
		stats.Rejected++
		stats.ByCode[rej.Code]++
		if tableDone {
			out.reject(rej)
			return
		}
		held = append(held, rej)
		if len(held) >= maxHeldRejects {
			finishTable()
		}
	}
	out.start()
	if want == 0 {
		finishTable()
	}
	var readErr error
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		var rowErr *sources.RowError
		if errors.As(err, &rowErr) {
			stats.Rows++
			addReject(m.RejectRow(rec, rowErr))
			continue
		}
		if err != nil {
			readErr = fmt.Errorf("preview: read row %d: %w", stats.Rows+1, err)
			break
		}
		stats.Rows++
		var row Row
		dropped = dropped[:0]
		if rej := m.MapWarn(nil, &rec, &row, &dropped); rej != nil {
			if rej.Code == CodeFiltered {
				stats.Filtered++
				continue
			}
			addReject(*rej)
			continue
		}
		for _, d := range dropped {
			if stats.Dropped == nil {
				stats.Dropped = map[string]int64{}
			}
			stats.Dropped[d.Code]++
		}
		stats.Mapped++
		send, dupRej := dedupe.Check(row)
		if err := dedupe.Err(); err != nil {
			readErr = fmt.Errorf("preview: row %d: %w", stats.Rows, err)
			break
		}
		if dupRej != nil {
			stats.Mapped--
			addReject(*dupRej)
		}
		if send && !tableDone {
			rows = append(rows, row)
			if len(rows) >= want {
				finishTable()
			}
		}
		if out.err() != nil {
			break
		}
	}
	finishTable()
	stats.Duplicates = dedupe.Duplicates()
	out.end(stats)
	if err := out.err(); err != nil {
		return stats, fmt.Errorf("preview: write: %w", err)
	}
	return stats, readErr
}

type previewWriter interface {
	start()
	rows([]Row)
	reject(Reject)
	end(PreviewStats)
	err() error
}

// textPreview writes the preview for a person.
type textPreview struct {
	m       *Mapper
	w       *bufio.Writer
	tables  io.Writer // w without the padding tabwriter leaves at the end of lines
	tw      *tabwriter.Writer
	rejects int
	werr    error
}

func (t *textPreview) err() error { return t.werr }

func (t *textPreview) printf(format string, args ...any) {
	if t.werr == nil {
		_, t.werr = fmt.Fprintf(t.w, format, args...)
	}
}

func (t *textPreview) start() {
	plan := t.m.Plan()
	t.printf("Columns (%d):\n", len(plan))
	tw := tabwriter.NewWriter(t.tables, 0, 4, 2, ' ', 0)
	for _, p := range plan {
		var target string
		switch {
		case p.Target == "":
			target = "- (not mapped, not sent)"
		case p.Target == TargetIgnore:
			target = "ignore (not sent)"
		case p.Target == TargetEmailFallback:
			target = "email fallback (" + p.Note + ")"
		case p.Slot != "":
			target = p.Target + " → " + p.Slot + " (" + p.Datatype + ")"
		case p.Note != "":
			target = p.Target + " (" + p.Datatype + ", " + p.Note + ")"
		default:
			target = p.Target
		}
		fmt.Fprintf(tw, "  %s\t%s\n", cell(p.Column, 40), target)
	}
	if err := tw.Flush(); err != nil && t.werr == nil {
		t.werr = err
	}
	spec := t.m.Spec()
	if len(spec.Constants) > 0 {
		t.printf("Constants:\n")
		for _, k := range sortedKeys(spec.Constants) {
			t.printf("  %s = %s\n", k, strconv.Quote(spec.Constants[k]))
		}
	}
	if len(t.m.baseTags) > 0 {
		t.printf("Tags on every row: %s\n", strings.Join(t.m.baseTags, ", "))
	}
	t.printf("Duplicate e-mail addresses: %s\n", t.m.duplicates)
}

// PreviewColumns returns the payload columns a preview shows: each mapped or constant field,
// in payload order (RowValue gives a row's value of one, ColumnTitle its name for people).
func (m *Mapper) PreviewColumns() []string {
	var cols []string
	has := map[string]bool{}
	for _, o := range m.ops {
		switch o.kind {
		case kStatus:
			has[TargetStatus] = true
		case kStatusMobile:
			has[TargetStatusMobile] = true
		case kTags:
			has[TargetTags] = true
		case kFullName:
			has[sink.FieldFirstname], has[sink.FieldLastname] = true, true
		default:
			has[o.name] = true
		}
		switch o.name {
		case sink.ConsentEmail:
			has[TargetStatus] = true
		case sink.ConsentSMS:
			has[TargetStatusMobile] = true
		case sink.ConsentEmailAndSMS:
			has[TargetStatus], has[TargetStatusMobile] = true, true
		}
	}
	for _, f := range standardFields {
		if has[f] || fieldOf(&m.base, f) != "" {
			cols = append(cols, f)
		}
	}
	var extra []string
	for k := range has {
		if !slices.Contains(standardFields, k) && k != TargetStatus && k != TargetStatusMobile && k != TargetTags {
			extra = append(extra, k)
		}
	}
	for _, f := range m.fields {
		if f.Value != "" && !has[f.Name] { // a constant
			extra = append(extra, f.Name)
		}
	}
	slices.Sort(extra)
	cols = append(cols, extra...)
	if has[TargetTags] || len(m.baseTags) > 0 {
		cols = append(cols, TargetTags)
	}
	if has[TargetStatus] || m.status != "" {
		cols = append(cols, TargetStatus)
	}
	if has[TargetStatusMobile] || m.statusMob != "" {
		cols = append(cols, TargetStatusMobile)
	}
	return cols
}

// RowValue is a row's value of a payload column (see PreviewColumns).
func RowValue(r Row, col string) string {
	switch col {
	case TargetStatus:
		return r.Status
	case TargetStatusMobile:
		return r.StatusMobile
	case TargetTags:
		return strings.Join(r.Sub.Tags, ",")
	}
	if slices.Contains(standardFields, col) {
		return fieldOf(&r.Sub, col)
	}
	return r.Sub.Field(col)
}

func where(line int, sheet string) string {
	if sheet != "" {
		return sheet + ":" + strconv.Itoa(line)
	}
	return strconv.Itoa(line)
}

func (t *textPreview) rows(rows []Row) {
	t.printf("\nFirst %s:\n", count(int64(len(rows)), "mapped row", "mapped rows"))
	if len(rows) == 0 {
		return
	}
	cols := t.m.PreviewColumns()
	tw := tabwriter.NewWriter(t.tables, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "LINE")
	for _, c := range cols {
		fmt.Fprint(tw, "\t", t.m.ColumnTitle(c))
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		fmt.Fprint(tw, where(r.Line, r.Sheet))
		for _, c := range cols {
			fmt.Fprint(tw, "\t", cell(RowValue(r, c), 32))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil && t.werr == nil {
		t.werr = err
	}
}

// ColumnTitle names a payload column for a person: a custom slot with its label.
func (m *Mapper) ColumnTitle(col string) string {
	for _, o := range m.ops {
		if o.name == col && o.label != "" {
			if strings.HasPrefix(col, PlannedSlot) {
				return o.label + " (new)"
			}
			return o.label + " (" + col + ")"
		}
	}
	return col
}

func (t *textPreview) reject(r Reject) {
	if t.rejects == 0 {
		t.printf("\nRejects:\n")
		t.tw = tabwriter.NewWriter(t.tables, 0, 4, 2, ' ', 0)
		fmt.Fprintln(t.tw, "LINE\tCOLUMN\tCODE\tVALUE\tMESSAGE")
	}
	t.rejects++
	for _, f := range r.Faults() { // every problem of the row, each on a line of its own
		value := ""
		if f.Value != "" {
			value = strconv.Quote(f.Value)
		}
		fmt.Fprintf(t.tw, "%s\t%s\t%s\t%s\t%s\n", where(r.Line, r.Sheet), cell(f.Column, 24), f.Code, value, f.Message)
	}
	if t.rejects%100 == 0 {
		t.flushRejects()
	}
}

func (t *textPreview) flushRejects() {
	if t.tw != nil {
		if err := t.tw.Flush(); err != nil && t.werr == nil {
			t.werr = err
		}
	}
}

func (t *textPreview) end(s PreviewStats) {
	t.flushRejects()
	t.printf("\n%s read: %d mapped, %d rejected", count(s.Rows, "row", "rows"), s.Mapped, s.Rejected)
	if s.Filtered > 0 {
		t.printf(", %d filtered (where)", s.Filtered)
	}
	if len(s.ByCode) > 0 {
		parts := make([]string, 0, len(s.ByCode))
		for _, c := range sortedKeys(s.ByCode) {
			parts = append(parts, fmt.Sprintf("%s %d", c, s.ByCode[c]))
		}
		t.printf(" (%s)", strings.Join(parts, ", "))
	}
	if len(s.Dropped) > 0 {
		parts := make([]string, 0, len(s.Dropped))
		for _, c := range sortedKeys(s.Dropped) {
			parts = append(parts, fmt.Sprintf("%s %d", c, s.Dropped[c]))
		}
		t.printf(", invalid values dropped from rows sent (on_invalid = \"drop\"): %s", strings.Join(parts, ", "))
	}
	t.printf(", %s (%s).\n", count(s.Duplicates, "duplicate e-mail address", "duplicate e-mail addresses"), map[string]string{
		DuplicatesLast:   "sent again: the last row wins",
		DuplicatesFirst:  "skipped: the first row wins",
		DuplicatesReject: "rejected: the first row wins",
	}[t.m.duplicates])
	if len(s.Unplaced) > 0 {
		t.printf("Not mapped, so not sent: %s. Map them, or list them under ignore.\n", strings.Join(quoteAll(s.Unplaced), ", "))
	}
}

func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strconv.Quote(s)
	}
	return out
}

// cell shortens a value for a table and keeps tabs and newlines out of it.
func cell(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > max {
		return shorten(s, max)
	}
	return s
}

// jsonPreview writes the preview as one JSON document:
//
//	{"columns":[…PlanEntry],"constants":{…},"tags":[…],"duplicates":"last",
//	 "rows":[{"ordinal":1,"line":2,"sheet":"","payload":{…},"status":"","status_mobile":""}],
//	 "rejects":[…Reject],"stats":{…PreviewStats}}
type jsonPreview struct {
	m       *Mapper
	w       *bufio.Writer
	rejects int
	werr    error
	buf     []byte
}

func (j *jsonPreview) err() error { return j.werr }

func (j *jsonPreview) write(b []byte) {
	if j.werr == nil {
		_, j.werr = j.w.Write(b)
	}
}

func (j *jsonPreview) value(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		if j.werr == nil {
			j.werr = err
		}
		return
	}
	j.write(b)
}

func (j *jsonPreview) start() {
	j.write([]byte(`{"columns":`))
	j.value(j.m.Plan())
	j.write([]byte(`,"constants":`))
	j.value(cmpOrMap(j.m.Spec().Constants))
	j.write([]byte(`,"tags":`))
	j.value(append([]string{}, j.m.baseTags...))
	j.write([]byte(`,"duplicates":`))
	j.value(j.m.duplicates)
}

func cmpOrMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

type jsonRow struct {
	Ordinal      int64           `json:"ordinal"`
	Line         int             `json:"line"`
	Sheet        string          `json:"sheet,omitempty"`
	Payload      json.RawMessage `json:"payload"`
	Status       string          `json:"status,omitempty"`
	StatusMobile string          `json:"status_mobile,omitempty"`
}

func (j *jsonPreview) rows(rows []Row) {
	j.write([]byte(`,"rows":[`))
	for i, r := range rows {
		if i > 0 {
			j.write([]byte{','})
		}
		j.buf = r.Sub.AppendJSON(j.buf[:0])
		j.value(jsonRow{Ordinal: r.Ordinal, Line: r.Line, Sheet: r.Sheet, Payload: j.buf, Status: r.Status, StatusMobile: r.StatusMobile})
	}
	j.write([]byte(`],"rejects":[`))
}

func (j *jsonPreview) reject(r Reject) {
	if j.rejects > 0 {
		j.write([]byte{','})
	}
	j.rejects++
	j.value(r)
}

func (j *jsonPreview) end(s PreviewStats) {
	j.write([]byte(`],"stats":`))
	j.value(s)
	j.write([]byte("}\n"))
}

// trimWriter drops the spaces at the end of each line written through it.
type trimWriter struct {
	w      io.Writer
	spaces int // spaces held back: written only if something other than a newline follows
}

func (t *trimWriter) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p)+t.spaces)
	for _, c := range p {
		switch c {
		case ' ':
			t.spaces++
			continue
		case '\n':
			t.spaces = 0
		default:
			for ; t.spaces > 0; t.spaces-- {
				out = append(out, ' ')
			}
		}
		out = append(out, c)
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
