package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

type syncRow struct {
	jobs.Schedule
	Last    *state.Run
	Running *state.Run
}

type syncsData struct {
	Syncs   []syncRow
	Status  syncRow
	Message string
	Error   string
}

func (s *Server) syncs(w http.ResponseWriter, r *http.Request) {
	d := syncsData{Message: r.URL.Query().Get("queued"), Error: r.URL.Query().Get("error")}
	st := s.b.State()
	for _, sc := range s.b.Schedules(s.opts.Now(), 3) {
		if sc.Also != "" {
			continue // a second schedule of a job listed already (see subsync schedules)
		}
		row := syncRow{Schedule: sc}
		f := state.RunFilter{Kind: sc.Kind, Limit: 1,
			States: []state.RunState{state.RunCompleted, state.RunFailed, state.RunCancelled}}
		if sc.Kind == jobs.KindSync {
			f.Name = sc.Name
		}
		last, err := st.Runs(r.Context(), f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(last) > 0 {
			row.Last = &last[0]
		}
		f.States = []state.RunState{state.RunRunning, state.RunRetrying, state.RunInterrupted}
		active, err := st.Runs(r.Context(), f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(active) > 0 {
			row.Running = &active[0]
		}
		if sc.Kind == jobs.KindSync {
			d.Syncs = append(d.Syncs, row)
		} else {
			d.Status = row
		}
	}
	s.render(w, r, "syncs", "Syncs", d)
}

func (s *Server) runNow(w http.ResponseWriter, r *http.Request) {
	if !s.checkCSRF(r) {
		http.Error(w, "the form is stale or did not come from these pages (CSRF token): reload the page", http.StatusForbidden)
		return
	}
	name := r.PathValue("name")
	id, err := s.b.EnqueueSync(r.Context(), name, r.PostFormValue("full") == "1")
	v := url.Values{}
	switch {
	case errors.Is(err, jobs.ErrAlreadyQueued):
		v.Set("queued", fmt.Sprintf("sync %s is already queued or running as job %d", name, id))
	case err != nil:
		s.log.WarnContext(r.Context(), "run now failed", slog.String("sync", name), slog.Any("error", err))
		v.Set("error", err.Error())
	default:
		s.log.InfoContext(r.Context(), "sync queued from the pages", slog.String("sync", name), slog.Int64("job_id", id))
		v.Set("queued", fmt.Sprintf("sync %s queued as job %d", name, id))
	}
	http.Redirect(w, r, "/syncs?"+v.Encode(), http.StatusSeeOther)
}

// HistoryRuns is how many of a sync's latest runs its page charts and lists.
const HistoryRuns = 30

type syncData struct {
	Schedule jobs.Schedule
	Verify   *jobs.Schedule // verify_every, when set
	Runs     []state.Run
	Chart    chart
	Running  *state.Run
}

// sync is a sync's page: its schedule, its last HistoryRuns runs as a chart and a table, and
// "Run now".
func (s *Server) sync(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var d syncData
	found := false
	for _, sc := range s.b.Schedules(s.opts.Now(), 3) {
		if sc.Kind != jobs.KindSync || sc.Name != name {
			continue
		}
		if sc.Also == "" {
			d.Schedule, found = sc, true
		} else {
			v := sc
			d.Verify = &v
		}
	}
	if !found {
		http.NotFound(w, r)
		return
	}
	runs, err := s.b.State().Runs(r.Context(), state.RunFilter{Kind: jobs.KindSync, Name: name, Limit: HistoryRuns})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Runs = runs
	for i := range runs {
		if !runs[i].State.Final() {
			d.Running = &runs[i]
			break
		}
	}
	if len(runs) > 0 {
		d.Chart = historyChart(runs)
	}
	every := time.Duration(0)
	if d.Running != nil {
		every = LiveEvery
	}
	s.renderLive(w, r, "sync", "Sync "+name, d, every)
}
