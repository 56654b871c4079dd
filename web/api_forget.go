package web

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/subsync/subsync/internal/runjson"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// Erasure and the suppression list: POST /api/v1/forget erases people as `subsync forget`
// does (the addresses checked by jobs.ForgetAddresses, recorded in the database, never in
// the queue; the erasure job queued, or the one queued or running joined), answering 202
// with the job; with dry_run it changes nothing and answers what `forget --dry-run --json`
// prints. GET /api/v1/suppression?email= looks an address up in the suppression list, as
// the Suppression page does for a whole address.

// forgetRequest is the body of POST /api/v1/forget.
type forgetRequest struct {
	Emails []string `json:"emails"`
	DryRun bool     `json:"dry_run"`
}

// forgetPlanAnswer is a dry run's answer.
type forgetPlanAnswer struct {
	DryRun bool                 `json:"dry_run"`
	Plans  []runjson.ForgetPlan `json:"plans"`
}

func (s *Server) apiForget(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		s.problem(w, http.StatusUnsupportedMediaType, probInvalid, "Content-Type", `send {"emails": [...]} as JSON`)
		return
	}
	var req forgetRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxFormField))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.problem(w, http.StatusBadRequest, probInvalid, "body", "the JSON body could not be read: "+err.Error())
		return
	}
	emails, err := jobs.ForgetAddresses(req.Emails)
	if err != nil {
		// The CLI's words, with the place in the list (never the text: it may be someone's data).
		s.problem(w, http.StatusUnprocessableEntity, probInvalid, "emails", err.Error())
		return
	}
	ctx := r.Context()
	if req.DryRun {
		dontKeep(r) // the answer holds addresses: kept nowhere
		plans, err := s.b.PlanForget(ctx, emails)
		if err != nil {
			s.problem(w, http.StatusBadGateway, probService, "", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, forgetPlanAnswer{DryRun: true, Plans: runjson.FromForgetPlans(plans)})
		return
	}
	id, _, err := s.b.RequestForget(ctx, emails)
	switch {
	case errors.Is(err, jobs.ErrAlreadyQueued):
		s.log.InfoContext(ctx, "erasure requested through the API: joined the one queued or running", slog.Int64("job_id", id),
			slog.Int("people", len(emails)), slog.String("token", callOf(ctx).token))
		w.Header().Set("Location", jobURL(id))
		writeJSON(w, http.StatusAccepted, queuedAnswer{Job: jobRef{ID: id, URL: jobURL(id)}, AlreadyQueued: true})
	case err != nil:
		s.apiFail(w, r, err)
	default:
		s.log.InfoContext(ctx, "erasure requested through the API", slog.Int64("job_id", id), slog.Int("people", len(emails)),
			slog.String("token", callOf(ctx).token))
		accepted(w, id)
	}
}

// suppressionAnswer is GET /api/v1/suppression?email=.
type suppressionAnswer struct {
	Email      string             `json:"email"`
	Suppressed bool               `json:"suppressed"`
	Erased     bool               `json:"erased"`
	Entries    []suppressionEntry `json:"entries"`
}

// suppressionEntry is one entry of the suppression list: a status for a list (0: every
// list), and its write-back to the source when one was queued.
type suppressionEntry struct {
	ListID    int64          `json:"list_id"`
	Status    string         `json:"status"`
	ChangedAt *time.Time     `json:"changed_at,omitempty"`
	LearntAt  *time.Time     `json:"learnt_at,omitempty"`
	PullRunID int64          `json:"pull_run_id,omitempty"`
	WriteBack *writeBackJSON `json:"write_back,omitempty"`
}

type writeBackJSON struct {
	Target    string `json:"target"`
	State     string `json:"state"`
	Attempts  int    `json:"attempts"`
	Unmatched int    `json:"unmatched"`
	Error     string `json:"error,omitempty"`
}

// suppressionLookup bounds the entries of one address.
const suppressionLookup = 100

func (s *Server) apiSuppression(w http.ResponseWriter, r *http.Request) {
	email := strings.TrimSpace(r.URL.Query().Get("email"))
	if email == "" {
		s.problem(w, http.StatusUnprocessableEntity, probInvalid, "email", "give the address to look up: ?email=ADDRESS")
		return
	}
	if _, err := jobs.ForgetAddresses([]string{email}); err != nil {
		s.problem(w, http.StatusUnprocessableEntity, probInvalid, "email", "not an e-mail address")
		return
	}
	ctx := r.Context()
	st := s.b.State()
	entries, err := st.SearchSuppressions(ctx, email, true, suppressionLookup)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	erased, err := st.IsErased(ctx, email)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	a := suppressionAnswer{Email: state.NormaliseEmail(email), Suppressed: len(entries) > 0, Erased: erased, Entries: []suppressionEntry{}}
	for _, e := range entries {
		j := suppressionEntry{ListID: e.ListID, Status: e.Status, ChangedAt: runjson.TimePtr(e.ChangedAt),
			LearntAt: runjson.TimePtr(e.LearntAt), PullRunID: e.PullRunID}
		if e.WriteBackTarget != "" {
			j.WriteBack = &writeBackJSON{Target: e.WriteBackTarget, State: e.WriteBackState, Attempts: e.WriteBackAttempts,
				Unmatched: e.WriteBackUnmatched, Error: e.WriteBackError}
		}
		a.Entries = append(a.Entries, j)
	}
	writeJSON(w, http.StatusOK, a)
}
