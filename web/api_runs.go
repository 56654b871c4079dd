package web

import (
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/subsync/subsync/internal/export"
	"github.com/subsync/subsync/internal/runjson"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// Jobs and runs: GET /api/v1/jobs/{id} (the job, and its run once it has one), DELETE
// cancels it; GET /api/v1/runs (newest first, filtered, paged by a cursor), /runs/{id} (as
// `runs ID --json`), /runs/{id}/rejects (the export of `runs ID --rejects -`, byte for byte;
// JSON with Accept: application/json).

// apiJob is a job with its URL; Job is nil when the queue has cleaned the job away and only
// its run is left.
type apiJob struct {
	*runjson.Job
	URL string `json:"url"`
}

// apiRun is a run with its URLs.
type apiRun struct {
	runjson.Run
	URL        string `json:"url"`
	RejectsURL string `json:"rejects_url"`
}

func withURLs(j runjson.Run) apiRun {
	return apiRun{Run: j, URL: runURL(j.ID), RejectsURL: runURL(j.ID) + "/rejects"}
}

// jobAnswer is GET /api/v1/jobs/{id}.
type jobAnswer struct {
	Job apiJob  `json:"job"`
	Run *apiRun `json:"run,omitempty"`
}

func (s *Server) apiJob(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "job")
	if !ok {
		return
	}
	ctx := r.Context()
	a := jobAnswer{Job: apiJob{URL: jobURL(id)}}
	info, err := s.b.Job(ctx, id)
	switch {
	case err == nil:
		j := runjson.FromJob(info)
		a.Job.Job = &j
	case !errors.Is(err, jobs.ErrNoSuchJob):
		s.apiFail(w, r, err)
		return
	}
	run, rerr := s.b.State().RunByJob(ctx, id)
	switch {
	case rerr == nil:
		st, err := runjson.ReadStory(ctx, s.b.State(), run)
		if err != nil {
			s.apiFail(w, r, err)
			return
		}
		ar := withURLs(runjson.Detail(run, st))
		a.Run = &ar
	case !errors.Is(rerr, state.ErrNotFound):
		s.apiFail(w, r, rerr)
		return
	case a.Job.Job == nil:
		s.problem(w, http.StatusNotFound, probNotFound, "id", fmt.Sprintf("job %d: no such job", id))
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) apiCancelJob(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r, "job")
	if !ok {
		return
	}
	err := s.b.CancelJob(r.Context(), id)
	switch {
	case errors.Is(err, jobs.ErrNoSuchJob):
		s.problem(w, http.StatusNotFound, probNotFound, "id", err.Error())
		return
	case errors.Is(err, jobs.ErrJobEnded):
		s.problem(w, http.StatusConflict, probConflict, "id", err.Error())
		return
	case err != nil:
		s.apiFail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "job cancelled through the API", slog.Int64("job_id", id), slog.String("token", callOf(r.Context()).token))
	s.apiJob(w, r)
}

// Paging of GET /api/v1/runs.
const (
	runsLimitDefault = 20
	runsLimitMax     = 100
)

// runsAnswer is GET /api/v1/runs: a page of runs, newest first, and the next page's URL
// and cursor when there are older runs.
type runsAnswer struct {
	Runs       []apiRun `json:"runs"`
	NextCursor string   `json:"next_cursor,omitempty"`
	Next       string   `json:"next,omitempty"`
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := state.RunFilter{Kind: q.Get("kind"), Limit: runsLimitDefault}
	switch f.Kind {
	case "", state.KindImport, state.KindSync, state.KindStatusPull, state.KindForget:
	default:
		s.problem(w, http.StatusUnprocessableEntity, probInvalid, "kind", fmt.Sprintf("%q: want import, sync, status_pull or forget", f.Kind))
		return
	}
	if name := q.Get("sync"); name != "" {
		if f.Kind != "" && f.Kind != state.KindSync {
			s.problem(w, http.StatusUnprocessableEntity, probInvalid, "sync", "sync goes with kind=sync or no kind")
			return
		}
		f.Kind, f.Name = state.KindSync, name
	}
	if v := q.Get("state"); v != "" {
		if !slices.Contains(runStates, state.RunState(v)) {
			s.problem(w, http.StatusUnprocessableEntity, probInvalid, "state",
				fmt.Sprintf("%q: want running, retrying, interrupted, completed, failed or cancelled", v))
			return
		}
		f.States = []state.RunState{state.RunState(v)}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > runsLimitMax {
			s.problem(w, http.StatusUnprocessableEntity, probInvalid, "limit", fmt.Sprintf("%q: want 1 to %d", v, runsLimitMax))
			return
		}
		f.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			s.problem(w, http.StatusUnprocessableEntity, probInvalid, "cursor", fmt.Sprintf("%q: give the next_cursor of the page before", v))
			return
		}
		f.BeforeID = n
	}
	limit := f.Limit
	f.Limit++
	runs, err := s.b.State().Runs(r.Context(), f)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	a := runsAnswer{Runs: []apiRun{}}
	if len(runs) > limit {
		runs = runs[:limit]
		a.NextCursor = strconv.FormatInt(runs[limit-1].ID, 10)
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("cursor", a.NextCursor)
		a.Next = APIPrefix + "/runs?" + next.Encode()
	}
	for _, run := range runs {
		a.Runs = append(a.Runs, withURLs(runjson.FromRun(run)))
	}
	writeJSON(w, http.StatusOK, a)
}

// apiRunByPath reads the run of the path's {id}; false when it answered.
func (s *Server) apiRunByPath(w http.ResponseWriter, r *http.Request) (state.Run, bool) {
	id, ok := s.pathID(w, r, "run")
	if !ok {
		return state.Run{}, false
	}
	run, err := s.b.State().Run(r.Context(), id)
	if errors.Is(err, state.ErrNotFound) {
		s.problem(w, http.StatusNotFound, probNotFound, "id", fmt.Sprintf("run %d: no such run", id))
		return state.Run{}, false
	}
	if err != nil {
		s.apiFail(w, r, err)
		return state.Run{}, false
	}
	return run, true
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	run, ok := s.apiRunByPath(w, r)
	if !ok {
		return
	}
	st, err := runjson.ReadStory(r.Context(), s.b.State(), run)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, withURLs(runjson.Detail(run, st)))
}

// Paging of the rejects as JSON.
const (
	rejectsLimitDefault = 100
	rejectsLimitMax     = 1000
)

// apiReject is a rejected row as JSON: where it is, and every problem it has.
type apiReject struct {
	Line     int             `json:"line"`
	Sheet    string          `json:"sheet,omitempty"`
	Code     string          `json:"code"`
	Problems []state.Problem `json:"problems"`
}

// rejectsAnswer is the JSON of GET /api/v1/runs/{id}/rejects.
type rejectsAnswer struct {
	Rejects    []apiReject `json:"rejects"`
	NextCursor string      `json:"next_cursor,omitempty"`
	Next       string      `json:"next,omitempty"`
}

// wantsJSON reports whether the request's Accept names application/json (and not CSV first).
func wantsJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json":
			return true
		case "text/csv":
			return false
		}
	}
	return false
}

func (s *Server) apiRejects(w http.ResponseWriter, r *http.Request) {
	run, ok := s.apiRunByPath(w, r)
	if !ok {
		return
	}
	if !run.RejectsPrunedAt.IsZero() {
		s.problem(w, http.StatusGone, probNotFound, "id", fmt.Sprintf("run %d: its rejected rows were deleted on %s by the retention policy (retention.rejects)",
			run.ID, run.RejectsPrunedAt.Format("2006-01-02 15:04:05 MST")))
		return
	}
	if wantsJSON(r) {
		s.apiRejectsJSON(w, r, run)
		return
	}
	// The bytes of `subsync runs ID --rejects -`: CSV without the byte-order mark, for programs.
	h := w.Header()
	h.Set("Content-Type", export.ContentType(export.CSV))
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"`, export.FileName(run.ID, export.CSV)))
	h.Set("Cache-Control", "no-store")
	if err := export.Rejects(r.Context(), s.b.State(), run.ID, w, export.Options{Format: export.CSV, NoBOM: true}); err != nil {
		// The answer has begun: the log says why it stopped.
		s.log.ErrorContext(r.Context(), "rejects export failed", slog.Int64("run_id", run.ID), slog.Any("error", err))
	}
}

func (s *Server) apiRejectsJSON(w http.ResponseWriter, r *http.Request, run state.Run) {
	q := r.URL.Query()
	limit := rejectsLimitDefault
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > rejectsLimitMax {
			s.problem(w, http.StatusUnprocessableEntity, probInvalid, "limit", fmt.Sprintf("%q: want 1 to %d", v, rejectsLimitMax))
			return
		}
		limit = n
	}
	var after int64
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.problem(w, http.StatusUnprocessableEntity, probInvalid, "cursor", fmt.Sprintf("%q: give the next_cursor of the page before", v))
			return
		}
		after = n
	}
	page, err := s.b.State().RejectsPage(r.Context(), run.ID, after, limit+1)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	a := rejectsAnswer{Rejects: []apiReject{}}
	if len(page) > limit {
		page = page[:limit]
		a.NextCursor = strconv.FormatInt(page[limit-1].Ordinal, 10)
		a.Next = fmt.Sprintf("%s/rejects?limit=%d&cursor=%s", runURL(run.ID), limit, a.NextCursor)
	}
	for _, rej := range page {
		a.Rejects = append(a.Rejects, apiReject{Line: rej.Line, Sheet: rej.Sheet, Code: rej.Code, Problems: rej.Problems()})
	}
	writeJSON(w, http.StatusOK, a)
}
