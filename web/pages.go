package web

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/subsync/subsync/internal/export"
	"github.com/subsync/subsync/internal/secret"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// runsPerPage is how many runs the runs page lists at a time.
const runsPerPage = 50

var pageNames = []string{"runs", "run", "job", "syncs", "sync", "suppression", "health", "forget", "upload", "import"}

func (s *Server) parseTemplates() error {
	funcs := template.FuncMap{
		"time":     s.formatTime,
		"schedule": jobs.DescribeSchedule,
		"duration": formatDuration,
		"email":    func(authed bool, e string) string { return maskEmail(authed, e) },
		"value":    maskValue,
		"words":    jobs.DescribeRun,
		"progress": func(r state.Run) *runProgress { return progressOf(r, s.opts.Now()) },
		"capital": func(s string) string {
			if s == "" {
				return s
			}
			return strings.ToUpper(s[:1]) + s[1:]
		},
		"list": func(id int64) string {
			if id == state.AllLists {
				return "all lists"
			}
			return strconv.FormatInt(id, 10)
		},
	}
	s.pages = map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("parse page %s: %w", name, err)
		}
		s.pages[name] = t
	}
	return nil
}

// page is what every template gets.
type page struct {
	Title  string
	Nav    string
	Authed bool
	CSRF   string
	Zone   string // the time zone the page's times are in
	Live   int    // how often the page looks again, in milliseconds (see live.go); 0: it does not
	Data   any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	s.renderLive(w, r, name, title, data, 0)
}

// renderLive renders a page that looks again every `every` (0: a page that does not).
func (s *Server) renderLive(w http.ResponseWriter, r *http.Request, name, title string, data any, every time.Duration) {
	var buf bytes.Buffer
	p := page{Title: title, Nav: name, Authed: authenticated(r), CSRF: s.csrfToken(), Zone: s.zoneName(),
		Live: liveMillis(every), Data: data}
	if err := s.pages[name].Execute(&buf, p); err != nil {
		s.fail(w, r, fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.log.ErrorContext(r.Context(), "page failed", slog.String("path", r.URL.Path), slog.Any("error", err))
	http.Error(w, "the page could not be built; the worker's log says why", http.StatusInternalServerError)
}

type runsData struct {
	Runs   []state.Run
	Syncs  []string
	States []state.RunState
	Sync   string
	State  string
	Older  string // the link to older runs, empty when there are none
}

var runStates = []state.RunState{state.RunRunning, state.RunRetrying, state.RunInterrupted,
	state.RunCompleted, state.RunFailed, state.RunCancelled}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := runsData{Sync: q.Get("sync"), State: q.Get("state"), States: runStates}
	for _, sc := range s.b.Schedules(s.opts.Now(), 0) {
		if sc.Kind == jobs.KindSync && sc.Also == "" {
			d.Syncs = append(d.Syncs, sc.Name)
		}
	}
	f := state.RunFilter{Limit: runsPerPage + 1}
	if d.Sync != "" {
		f.Kind, f.Name = jobs.KindSync, d.Sync
	}
	if d.State != "" {
		f.States = []state.RunState{state.RunState(d.State)}
	}
	if v, err := strconv.ParseInt(q.Get("before"), 10, 64); err == nil {
		f.BeforeID = v
	}
	runs, err := s.b.State().Runs(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(runs) > runsPerPage {
		runs = runs[:runsPerPage]
		v := url.Values{}
		if d.Sync != "" {
			v.Set("sync", d.Sync)
		}
		if d.State != "" {
			v.Set("state", d.State)
		}
		v.Set("before", strconv.FormatInt(runs[len(runs)-1].ID, 10))
		d.Older = "/runs?" + v.Encode()
	}
	d.Runs = runs
	// The first page follows the runs under way, and looks for new ones now and then.
	every := time.Duration(0)
	if f.BeforeID == 0 {
		every = IdleEvery
		for _, run := range runs {
			if !run.State.Final() {
				every = LiveEvery
				break
			}
		}
	}
	s.renderLive(w, r, "runs", "Runs", d, every)
}

func (s *Server) runByPath(w http.ResponseWriter, r *http.Request) (state.Run, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return state.Run{}, false
	}
	run, err := s.b.State().Run(r.Context(), id)
	if errors.Is(err, state.ErrNotFound) {
		http.NotFound(w, r)
		return state.Run{}, false
	}
	if err != nil {
		s.fail(w, r, err)
		return state.Run{}, false
	}
	return run, true
}

// rejects is the same export as `subsync runs ID --rejects FILE` (export.Rejects): CSV for
// a spreadsheet (a byte-order mark, the source's delimiter, formula-safe) at
// /runs/{id}/rejects.csv, a workbook at /runs/{id}/rejects.xlsx.
func (s *Server) rejects(format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !authenticated(r) {
			http.Error(w, "the rejects hold e-mail addresses: set a password for the pages (SUBSYNC_WEB_PASSWORD) "+
				"to download them, or use `subsync runs ID --rejects FILE`", http.StatusForbidden)
			return
		}
		run, ok := s.runByPath(w, r)
		if !ok {
			return
		}
		var buf bytes.Buffer
		if err := export.Rejects(r.Context(), s.b.State(), run.ID, &buf, export.Options{Format: format}); err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", export.ContentType(format))
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"`, export.FileName(run.ID, format)))
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(buf.Bytes())
	}
}

type suppressionData struct {
	Query      string
	Searched   bool
	Exact      bool
	Entries    []state.SuppressionEntry
	Counts     []state.SuppressionCount
	WriteBacks []state.WriteBackSummary
}

// suppressionResults caps a search's answer.
const suppressionResults = 100

func (s *Server) suppression(w http.ResponseWriter, r *http.Request) {
	d := suppressionData{Query: strings.TrimSpace(r.URL.Query().Get("q")), Exact: !authenticated(r)}
	o, err := s.b.StatusOverview(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Counts, d.WriteBacks = o.Suppressed, o.WriteBacks
	if d.Query != "" {
		d.Searched = true
		d.Entries, err = s.b.State().SearchSuppressions(r.Context(), d.Query, d.Exact, suppressionResults)
		if err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.render(w, r, "suppression", "Suppression", d)
}

type healthData struct {
	Database    error
	Service     error
	LastPull    *state.Run
	Cursor      time.Time
	Lag         time.Duration
	WriteBacks  []state.WriteBackSummary
	OverviewErr error
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d := healthData{Database: s.b.State().Ping(ctx)}
	d.Service = s.b.PingService(ctx)
	if d.Database == nil {
		pulls, err := s.b.State().Runs(ctx, state.RunFilter{Kind: jobs.KindStatusPull, Limit: 1})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(pulls) > 0 {
			d.LastPull = &pulls[0]
		}
		o, err := s.b.StatusOverview(ctx)
		d.OverviewErr = err
		d.Cursor, d.WriteBacks = o.Cursor, o.WriteBacks
		if !d.Cursor.IsZero() {
			d.Lag = s.opts.Now().Sub(d.Cursor)
		}
	}
	status := http.StatusOK
	if d.Database != nil {
		status = http.StatusServiceUnavailable
	}
	if status != http.StatusOK {
		w.WriteHeader(status)
	}
	s.render(w, r, "health", "Health", d)
}

// zoneName names the pages' time zone: its IANA name, or for the machine's zone its
// abbreviation and offset now ("CET, UTC+01:00").
func (s *Server) zoneName() string {
	if name := s.opts.TimeZone.String(); name != "Local" {
		return name
	}
	now := s.opts.Now().In(s.opts.TimeZone)
	if now.Format("MST") == "UTC" {
		return "UTC"
	}
	return now.Format("MST, UTC-07:00")
}

// formatTime shows a time in the pages' time zone (web.time_zone).
func (s *Server) formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(s.opts.TimeZone).Format("2006-01-02 15:04:05 MST")
}

func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// maskValue shows a value of a row to an authenticated user, and otherwise masks an e-mail
// address (secret.Email) and a phone number, or any value of five digits or more
// (secret.Phone).
func maskValue(authed bool, v string) string {
	switch {
	case authed:
		return v
	case strings.Contains(v, "@"):
		return maskEmail(false, v)
	case secret.LooksLikePhone(v):
		return secret.Phone(v)
	}
	return v
}

// maskEmail shows an address to an authenticated user, and otherwise only secret.Email's
// first letter and domain.
func maskEmail(authed bool, e string) string {
	if authed || e == "" {
		return e
	}
	return secret.Email(e)
}
