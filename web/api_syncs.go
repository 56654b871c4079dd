package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"

	"github.com/subsync/subsync/internal/runjson"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// Syncs: GET /api/v1/syncs lists the configured syncs with their schedule (as `subsync
// schedules --json`), next runs, last finished run and the run under way; POST
// /api/v1/syncs/{name}/runs queues one now, as `subsync sync NAME` does (full, verify,
// allow_removals), answering 202 with the job, the one already queued or running when
// there is one (already_queued).

// nextRunsShown is how many next run times GET /api/v1/syncs gives.
const nextRunsShown = 3

// apiSync is a configured sync.
type apiSync struct {
	runjson.Schedule
	// VerifySchedule is the sync's verify_every, when set.
	VerifySchedule *runjson.Schedule `json:"verify_schedule,omitempty"`
	LastRun        *apiRun           `json:"last_run,omitempty"`
	Running        *apiRun           `json:"running,omitempty"`
	RunsURL        string            `json:"runs_url"`
}

func (s *Server) apiSyncs(w http.ResponseWriter, r *http.Request) {
	out := []apiSync{}
	index := map[string]int{}
	for _, sc := range s.b.Schedules(s.opts.Now(), nextRunsShown) {
		if sc.Kind != jobs.KindSync {
			continue
		}
		if sc.Also != "" {
			if i, ok := index[sc.Name]; ok {
				v := runjson.FromSchedule(sc)
				out[i].VerifySchedule = &v
			}
			continue
		}
		a := apiSync{Schedule: runjson.FromSchedule(sc), RunsURL: fmt.Sprintf("%s/syncs/%s/runs", APIPrefix, sc.Name)}
		f := state.RunFilter{Kind: jobs.KindSync, Name: sc.Name, Limit: 1,
			States: []state.RunState{state.RunCompleted, state.RunFailed, state.RunCancelled}}
		last, err := s.b.State().Runs(r.Context(), f)
		if err != nil {
			s.apiFail(w, r, err)
			return
		}
		if len(last) > 0 {
			run := withURLs(runjson.FromRun(last[0]))
			a.LastRun = &run
		}
		f.States = []state.RunState{state.RunRunning, state.RunRetrying, state.RunInterrupted}
		active, err := s.b.State().Runs(r.Context(), f)
		if err != nil {
			s.apiFail(w, r, err)
			return
		}
		if len(active) > 0 {
			run := withURLs(runjson.FromRun(active[0]))
			a.Running = &run
		}
		index[sc.Name] = len(out)
		out = append(out, a)
	}
	writeJSON(w, http.StatusOK, map[string][]apiSync{"syncs": out})
}

// syncRequest is the body of POST /api/v1/syncs/{name}/runs (optional).
type syncRequest struct {
	Full          bool `json:"full"`
	Verify        bool `json:"verify"`
	AllowRemovals bool `json:"allow_removals"`
}

func (s *Server) apiSyncRun(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	known := false
	for _, sc := range s.b.Schedules(s.opts.Now(), 0) {
		known = known || sc.Kind == jobs.KindSync && sc.Name == name
	}
	if !known {
		s.problem(w, http.StatusNotFound, probNotFound, "name", fmt.Sprintf("no sync named %q in the configuration", name))
		return
	}
	var req syncRequest
	if r.ContentLength != 0 {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			s.problem(w, http.StatusUnsupportedMediaType, probInvalid, "Content-Type", "send the options as JSON, or no body")
			return
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, maxFormField))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
			s.problem(w, http.StatusBadRequest, probInvalid, "body", "the JSON body could not be read: "+err.Error())
			return
		}
	}
	if req.Verify && req.Full {
		s.problem(w, http.StatusUnprocessableEntity, probInvalid, "verify", "verify goes with neither full (which sends every row) nor a dry run")
		return
	}
	ctx := r.Context()
	id, err := s.b.EnqueueSyncArgs(ctx, jobs.SyncArgs{Name: name, Full: req.Full, Verify: req.Verify, AllowRemovals: req.AllowRemovals})
	var notFull *jobs.FullNotQueuedError
	switch {
	case errors.As(err, &notFull):
		// Asked for a run the one queued already is not: refused, as the command line refuses it.
		s.problem(w, http.StatusConflict, probConflict, "name", err.Error())
		return
	case errors.Is(err, jobs.ErrAlreadyQueued):
		s.log.InfoContext(ctx, "sync already queued or running: answered with that job", slog.String("sync", name), slog.Int64("job_id", id))
		w.Header().Set("Location", jobURL(id))
		writeJSON(w, http.StatusAccepted, queuedAnswer{Job: jobRef{ID: id, URL: jobURL(id)}, AlreadyQueued: true})
		return
	case err != nil:
		s.apiFail(w, r, err)
		return
	}
	s.log.InfoContext(ctx, "sync queued through the API", slog.String("sync", name), slog.Int64("job_id", id),
		slog.Bool("full", req.Full), slog.Bool("verify", req.Verify), slog.String("token", callOf(ctx).token))
	accepted(w, id)
}
