package web

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// The import page: `subsync import` in the browser. A file is uploaded (/imports/new → POST
// /imports), staged as the command line stages a file on Postgres (StageUpload: the same
// checks, on SQLite too) and waits as an upload; its page (/imports/TOKEN) shows what the
// reader found in it (kind, encoding, delimiter, sheet, header row), each column with three
// of its values and the target the automatic mapping chose, in a select to change; the list;
// "Preview" runs the same preview as `subsync preview` (the rows as they would be sent, every
// reject with its reasons); "Import" queues the import (EnqueueStaged) and opens its job's
// page; "Download the mapping" gives the mapping as a file for the configuration.
//
// An upload is named by a token: its staged file's id and an HMAC of it under the pages' key,
// so that the pages reach only the files uploaded through them. The uploaded file is never
// sent back.

// MaxUploadSizeDefault bounds an upload when Options.MaxUploadSize is 0: 1 GiB.
const MaxUploadSizeDefault = 1 << 30

// Preview sizes of the import page.
const (
	previewRows    = 10
	previewRejects = 500
)

func (s *Server) maxUpload() int64 {
	if s.opts.MaxUploadSize > 0 {
		return s.opts.MaxUploadSize
	}
	return MaxUploadSizeDefault
}

// uploadToken names an upload for the pages.
func (s *Server) uploadToken(id int64) string {
	m := hmac.New(sha256.New, s.csrfKey)
	fmt.Fprintf(m, "subsync-upload-%d", id)
	return fmt.Sprintf("%d-%s", id, hex.EncodeToString(m.Sum(nil))[:32])
}

// uploadID reads a token; false for one the pages did not make.
func (s *Server) uploadID(token string) (int64, bool) {
	idText, _, ok := strings.Cut(token, "-")
	id, err := strconv.ParseInt(idText, 10, 64)
	if !ok || err != nil || id <= 0 {
		return 0, false
	}
	return id, hmac.Equal([]byte(token), []byte(s.uploadToken(id)))
}

type uploadForm struct {
	MaxSize string
	Error   string
}

func (s *Server) importForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "upload", "Import a file", uploadForm{MaxSize: formatBytes(s.maxUpload())})
}

// upload receives the form of /imports/new as it streams in: the CSRF token first, then the
// file, copied straight to StageUpload; a file over the limit is refused (413) and nothing
// of it is kept.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.maxUpload()+1<<20) // the file and the form around it
	fail := func(status int, msg string) {
		w.WriteHeader(status)
		s.render(w, r, "upload", "Import a file", uploadForm{MaxSize: formatBytes(s.maxUpload()), Error: msg})
	}
	mr, err := r.MultipartReader()
	if err != nil {
		fail(http.StatusBadRequest, "the form did not come as a file upload: choose a file and send the form again")
		return
	}
	part, err := mr.NextPart()
	if err != nil || part.FormName() != "csrf" {
		staleForm(w)
		return
	}
	token, err := io.ReadAll(io.LimitReader(part, 256))
	if err != nil || !hmac.Equal(token, []byte(s.csrfToken())) {
		staleForm(w)
		return
	}
	part, err = mr.NextPart()
	if err != nil || part.FormName() != "file" || part.FileName() == "" {
		fail(http.StatusBadRequest, "choose a CSV or Excel (.xlsx) file to import")
		return
	}
	f, err := s.b.StageUpload(r.Context(), part.FileName(), &limited{r: part, left: s.maxUpload()})
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig), errors.Is(err, errTooLarge):
		fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("the file is larger than the %s these pages take (web.max_upload_size): "+
			"import it with subsync import", formatBytes(s.maxUpload())))
		return
	case errors.Is(err, jobs.ErrNotImportable):
		fail(http.StatusUnprocessableEntity, err.Error())
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "file uploaded for an import", slog.Int64("staged_file", f.ID), slog.Int64("bytes", f.Size))
	http.Redirect(w, r, "/imports/"+s.uploadToken(f.ID), http.StatusSeeOther)
}

var errTooLarge = errors.New("upload too large")

// limited reads at most left bytes, and fails past them.
type limited struct {
	r    io.Reader
	left int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

// fileOptions are how the file is read: what the reader found, or what the person set.
type fileOptions struct {
	Sheet     string
	HeaderRow int
	Encoding  string
	Delimiter string
}

func (o fileOptions) source(path string) sources.Config {
	return sources.Config{Path: path, Sheet: o.Sheet, HeaderRow: o.HeaderRow, Encoding: o.Encoding, Delimiter: o.Delimiter}
}

// importData is the page of an upload.
type importData struct {
	Token   string
	File    state.StagedFile
	Facts   jobs.FileFacts
	Options fileOptions
	Columns []importColumn
	Targets []targetOption
	Lists   []sink.List
	ListID  int64
	// Notes are what could not be read from the service (its lists, its custom fields).
	Notes   []string
	Error   string
	Preview *importPreview
}

type importColumn struct {
	Index   int
	Name    string
	Samples []string
	Target  string // the target chosen ("" = not sent)
	Auto    string // the automatic mapping's
}

type targetOption struct{ Value, Label string }

// importPreview is what "Preview" shows: the preview of `subsync preview`.
type importPreview struct {
	m       *mapping.Mapper
	cols    []string // the payload columns shown
	Titles  []string
	Rows    []previewRow
	Rejects []mapping.Reject
	More    int64 // rejects past those listed
	Stats   mapping.PreviewStats
	Codes   []codeCount
}

type previewRow struct {
	Line   int
	Sheet  string
	Values []string
}

type codeCount struct {
	Code  string
	Count int64
}

// PreviewRows and PreviewReject make importPreview a mapping.PreviewSink.
func (p *importPreview) PreviewRows(rows []mapping.Row) {
	p.Rows = make([]previewRow, 0, len(rows))
	for _, r := range rows {
		row := previewRow{Line: r.Line, Sheet: r.Sheet}
		for _, c := range p.cols {
			row.Values = append(row.Values, mapping.RowValue(r, c))
		}
		p.Rows = append(p.Rows, row)
	}
}

func (p *importPreview) PreviewReject(r mapping.Reject) {
	if len(p.Rejects) < previewRejects {
		p.Rejects = append(p.Rejects, r)
		return
	}
	p.More++
}

// pendingUpload finds the upload of the page's token; it answers the request when it cannot.
func (s *Server) pendingUpload(w http.ResponseWriter, r *http.Request) (string, state.StagedFile, bool) {
	token := r.PathValue("token")
	id, ok := s.uploadID(token)
	if !ok {
		http.NotFound(w, r)
		return "", state.StagedFile{}, false
	}
	f, err := s.b.State().PendingUpload(r.Context(), id)
	if errors.Is(err, state.ErrNotFound) {
		w.WriteHeader(http.StatusGone)
		s.render(w, r, "upload", "Import a file", uploadForm{MaxSize: formatBytes(s.maxUpload()),
			Error: "that upload was imported already, or waited too long and was deleted: upload the file again"})
		return "", state.StagedFile{}, false
	}
	if err != nil {
		s.fail(w, r, err)
		return "", state.StagedFile{}, false
	}
	return token, f, true
}

// importPage shows an upload as the reader finds it, mapped automatically.
func (s *Server) importPage(w http.ResponseWriter, r *http.Request) {
	token, f, ok := s.pendingUpload(w, r)
	if !ok {
		return
	}
	d := importData{Token: token, File: f}
	s.inspect(r.Context(), &d, nil)
	s.render(w, r, "import", "Import "+f.Name, d)
}

// importAction is the upload page's form: "Read again" with other options, "Preview",
// "Import" or "Download the mapping" (the button's action).
func (s *Server) importAction(w http.ResponseWriter, r *http.Request) {
	token, f, ok := s.pendingUpload(w, r)
	if !ok {
		return
	}
	if !s.checkCSRF(r) {
		staleForm(w)
		return
	}
	d := importData{Token: token, File: f, Options: formOptions(r)}
	d.ListID, _ = strconv.ParseInt(r.PostFormValue("list"), 10, 64)
	action := r.PostFormValue("action")
	chosen := r.PostForm
	if action == "read" {
		chosen = nil // the columns may differ: start from the automatic mapping again
	}
	path, cleanup := s.inspect(r.Context(), &d, chosen)
	defer cleanup()
	if d.Error != "" || path == "" {
		w.WriteHeader(http.StatusUnprocessableEntity)
		s.render(w, r, "import", "Import "+f.Name, d)
		return
	}
	spec := d.spec()
	switch action {
	case "mapping":
		name := strings.TrimSuffix(f.Name, fileExt(f.Name)) + ".mapping.toml"
		w.Header().Set("Content-Type", "application/toml; charset=utf-8")
		disp := mime.FormatMediaType("attachment", map[string]string{"filename": name})
		if disp == "" {
			disp = `attachment; filename="mapping.toml"`
		}
		w.Header().Set("Content-Disposition", disp)
		_, _ = w.Write(spec.TOML(fmt.Sprintf("the mapping of %s, made on subsync's import page", f.Name)))
		return
	case "preview":
		s.preview(r.Context(), &d, path, spec)
	case "import":
		if id, err := s.queueImport(r.Context(), &d, spec); err == nil {
			http.Redirect(w, r, fmt.Sprintf("/jobs/%d", id), http.StatusSeeOther)
			return
		}
	}
	if d.Error != "" {
		w.WriteHeader(http.StatusUnprocessableEntity)
	}
	s.render(w, r, "import", "Import "+f.Name, d)
}

func fileExt(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[i:]
	}
	return ""
}

func formOptions(r *http.Request) fileOptions {
	o := fileOptions{Sheet: r.PostFormValue("sheet"), Encoding: strings.TrimSpace(r.PostFormValue("encoding")),
		Delimiter: r.PostFormValue("delimiter")}
	o.HeaderRow, _ = strconv.Atoi(r.PostFormValue("header_row"))
	return o
}

// inspect reads the upload with the page's options into d: what the reader found, the
// columns with their values and targets (the automatic mapping's, or chosen's where the form
// chose), the targets to choose from and the lists. It returns the local copy of the file
// (and its cleanup) for a preview; the path is "" when the file could not be read (d.Error
// says why).
func (s *Server) inspect(ctx context.Context, d *importData, chosen map[string][]string) (string, func()) {
	path, cleanup, err := s.b.RestoreStaged(ctx, d.File)
	if err != nil {
		d.Error = "the upload could not be read back: " + err.Error()
		return "", func() {}
	}
	facts, err := jobs.InspectFile(ctx, d.Options.source(path))
	if err != nil {
		d.Error = strings.ReplaceAll(err.Error(), path, d.File.Name)
		d.Facts.Kind = facts.Kind
		return "", cleanup
	}
	d.Facts = facts
	// Read as found: the run reads the same sheet, header row, encoding and delimiter.
	d.Options = fileOptions{Sheet: facts.Sheet, HeaderRow: facts.HeaderRow, Encoding: facts.Encoding, Delimiter: facts.Delimiter}
	for i, name := range facts.Header {
		c := importColumn{Index: i, Name: name, Samples: facts.Samples[i]}
		if ac, ok := facts.Auto.Columns[name]; ok {
			c.Auto = mapping.TargetString(ac)
		} else if slices.Contains(facts.Auto.Ignore, name) {
			c.Auto = mapping.TargetIgnore
		}
		c.Target = c.Auto
		if chosen != nil {
			c.Target = strings.TrimSpace(first(chosen["col"+strconv.Itoa(i)]))
		}
		d.Columns = append(d.Columns, c)
	}
	d.Targets = s.targets(ctx, d)
	lists, err := s.b.Lists(ctx)
	if err != nil {
		d.Notes = append(d.Notes, "The service's lists could not be read ("+err.Error()+"): give the list's id.")
	}
	d.Lists = lists
	if d.ListID == 0 && len(lists) == 1 {
		d.ListID = lists[0].ID
	}
	return path, cleanup
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// targets are what a column can be sent as: the subscriber fields, a full name, the consent
// fields, the statuses and tags, the service's custom fields, and any target chosen already.
func (s *Server) targets(ctx context.Context, d *importData) []targetOption {
	var out []targetOption
	seen := map[string]bool{"": true, mapping.TargetIgnore: true}
	add := func(value, label string) {
		if !seen[value] {
			seen[value] = true
			out = append(out, targetOption{value, label})
		}
	}
	for _, t := range mapping.Targets() {
		add(t, t)
	}
	fields, err := s.b.CustomFields(ctx)
	if err != nil {
		d.Notes = append(d.Notes, "The service's custom fields could not be read ("+err.Error()+").")
	}
	for _, f := range fields {
		add("custom:"+f.Label, "custom field: "+f.Label)
	}
	for _, c := range d.Columns {
		add(c.Auto, c.Auto)
		add(c.Target, c.Target)
	}
	return out
}

// spec is the mapping the page's columns make: each column's target as chosen (the automatic
// mapping's column kept whole where the choice is its own), "ignore" for a column left out on
// purpose, nothing for one not sent. It is whole (auto = false): a column the page does not
// send is not mapped by its name again.
func (d *importData) spec() mapping.Spec {
	spec := d.Facts.Auto
	spec.Columns = map[string]mapping.Column{}
	spec.Ignore = nil
	spec.NoAuto = true
	for _, c := range d.Columns {
		switch {
		case c.Target == "":
		case c.Target == mapping.TargetIgnore:
			spec.Ignore = append(spec.Ignore, c.Name)
		case c.Target == c.Auto:
			if ac, ok := d.Facts.Auto.Columns[c.Name]; ok {
				spec.Columns[c.Name] = ac
				continue
			}
			fallthrough
		default:
			col, err := mapping.ParseTarget(c.Target)
			if err != nil {
				d.Error = fmt.Sprintf("column %q: %v", c.Name, err)
				continue
			}
			spec.Columns[c.Name] = col
		}
	}
	if len(spec.Columns) == 0 {
		// No column sent: say so as a mapping with no e-mail column does, not as "automatic".
		spec.Columns = map[string]mapping.Column{}
	}
	return spec
}

// preview runs the preview of `subsync preview` on the file with spec.
func (s *Server) preview(ctx context.Context, d *importData, path string, spec mapping.Spec) {
	if len(spec.Columns) == 0 {
		d.Error = "no column is sent: choose a target for the e-mail column at least"
		return
	}
	p, err := jobs.OpenPreview(ctx, d.Options.source(path), spec, pageFields{s.b})
	if err != nil {
		d.Error = strings.ReplaceAll(err.Error(), path, d.File.Name)
		return
	}
	defer p.Reader.Close()
	pv := &importPreview{m: p.Mapper, cols: p.Mapper.PreviewColumns()}
	for _, c := range pv.cols {
		pv.Titles = append(pv.Titles, p.Mapper.ColumnTitle(c))
	}
	stats, err := mapping.PreviewTo(ctx, p.Reader, p.Mapper, mapping.PreviewOptions{Rows: previewRows}, pv)
	if err != nil {
		d.Error = strings.ReplaceAll(err.Error(), path, d.File.Name)
	}
	pv.Stats = stats
	for code, n := range stats.ByCode {
		pv.Codes = append(pv.Codes, codeCount{code, n})
	}
	slices.SortFunc(pv.Codes, func(a, b codeCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Code, b.Code))
	})
	d.Preview = pv
}

// queueImport queues the import of the upload with spec into the page's list: the list
// checked with the service first, as `subsync import` does; the upload claimed, so that one
// upload makes one import.
func (s *Server) queueImport(ctx context.Context, d *importData, spec mapping.Spec) (int64, error) {
	fail := func(msg string) (int64, error) {
		d.Error = msg
		return 0, errors.New(msg)
	}
	if d.ListID <= 0 {
		return fail("choose the list to import into")
	}
	if len(spec.Columns) == 0 {
		return fail("no column is sent: choose a target for the e-mail column at least")
	}
	if err := s.b.CheckList(ctx, d.ListID); errors.Is(err, jobs.ErrNoSuchList) {
		return fail(fmt.Sprintf("the service has no list %d", d.ListID))
	} else if err != nil {
		return fail("the list could not be checked with the service: " + err.Error())
	}
	f, err := s.b.State().ClaimUpload(ctx, d.File.ID)
	if err != nil {
		return fail("that upload was imported already, or waited too long: upload the file again")
	}
	args := jobs.ImportArgs{ListID: d.ListID, Mapping: &spec, Format: d.Facts.Kind, Encoding: d.Options.Encoding,
		Delimiter: d.Options.Delimiter, Sheet: d.Options.Sheet, HeaderRow: d.Options.HeaderRow}
	id, err := s.b.EnqueueStaged(ctx, args, f)
	if err != nil {
		return fail("the import could not be queued: " + err.Error())
	}
	s.log.InfoContext(ctx, "import queued from the pages", slog.Int64("job_id", id), slog.Int64("list_id", d.ListID))
	return id, nil
}

// pageFields are the service's custom fields for a preview, which never creates one.
type pageFields struct{ b Backend }

func (f pageFields) CustomFields(ctx context.Context) ([]sink.CustomField, error) {
	return f.b.CustomFields(ctx)
}

func (f pageFields) CreateCustomField(context.Context, sink.CustomField) (sink.CustomField, error) {
	return sink.CustomField{}, errors.New("a preview creates no custom field")
}

// formatBytes says a size for people: "1 GiB", "512 MiB", "300 KiB", "12 bytes".
func formatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size {
			v := float64(n) / float64(u.size)
			if v == float64(int64(v)) {
				return fmt.Sprintf("%d %s", int64(v), u.name)
			}
			return fmt.Sprintf("%.1f %s", v, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
