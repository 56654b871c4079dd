package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/subsync/subsync/jobs"
)

// Operator actions beside the status pull: queue a status pull or a reconciliation now, the
// same jobs `subsync status pull` and `subsync status reconcile` queue, and open the job's
// page, which follows it.

func (s *Server) pullNow(w http.ResponseWriter, r *http.Request) {
	s.queueStatus(w, r, "status pull", s.b.EnqueueStatusPull)
}

func (s *Server) reconcileNow(w http.ResponseWriter, r *http.Request) {
	s.queueStatus(w, r, "reconciliation", s.b.EnqueueReconcile)
}

func (s *Server) queueStatus(w http.ResponseWriter, r *http.Request, what string, enqueue func(context.Context) (int64, error)) {
	if !s.checkCSRF(r) {
		staleForm(w)
		return
	}
	id, err := enqueue(r.Context())
	switch {
	case errors.Is(err, jobs.ErrAlreadyQueued):
		http.Redirect(w, r, fmt.Sprintf("/jobs/%d?already=1", id), http.StatusSeeOther)
	case err != nil:
		s.log.WarnContext(r.Context(), what+" from the pages failed", slog.Any("error", err))
		http.Redirect(w, r, "/syncs?error="+url.QueryEscape(err.Error()), http.StatusSeeOther)
	default:
		s.log.InfoContext(r.Context(), what+" queued from the pages", slog.Int64("job_id", id))
		http.Redirect(w, r, fmt.Sprintf("/jobs/%d", id), http.StatusSeeOther)
	}
}

func staleForm(w http.ResponseWriter) {
	http.Error(w, "the form is stale or did not come from these pages (CSRF token): reload the page", http.StatusForbidden)
}

// The erasure page: `subsync forget` in the browser, for a signed-in user only (it takes and
// shows addresses). The addresses go in a form; "Check" shows the dry run (what each address
// has in the service and in subsync's tables, changing nothing); "Erase" on that page queues
// the erasure (the addresses wait in the database, never in the queue) and opens the job.

type forgetData struct {
	Emails string // the form's text, one address a line
	Plans  []jobs.ForgetPlan
	Error  string
}

// signedIn refuses a request without the pages' password.
func signedIn(w http.ResponseWriter, r *http.Request) bool {
	if authenticated(r) {
		return true
	}
	http.Error(w, "erasing people needs a signed-in user: set a password for these pages (SUBSYNC_WEB_PASSWORD), "+
		"or use `subsync forget`", http.StatusForbidden)
	return false
}

func (s *Server) forgetForm(w http.ResponseWriter, r *http.Request) {
	if !signedIn(w, r) {
		return
	}
	s.render(w, r, "forget", "Erase people", forgetData{})
}

// forgetAddresses reads the form's addresses, one a line.
func forgetAddresses(r *http.Request) (string, []string, error) {
	text := r.PostFormValue("emails")
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	emails, err := jobs.ForgetAddresses(lines)
	return text, emails, err
}

func (s *Server) forgetPlan(w http.ResponseWriter, r *http.Request) {
	if !signedIn(w, r) {
		return
	}
	if !s.checkCSRF(r) {
		staleForm(w)
		return
	}
	text, emails, err := forgetAddresses(r)
	d := forgetData{Emails: text}
	if err == nil {
		d.Plans, err = s.b.PlanForget(r.Context(), emails)
	}
	if err != nil {
		d.Error = err.Error()
		w.WriteHeader(http.StatusUnprocessableEntity)
	}
	s.render(w, r, "forget", "Erase people", d)
}

func (s *Server) forget(w http.ResponseWriter, r *http.Request) {
	if !signedIn(w, r) {
		return
	}
	if !s.checkCSRF(r) {
		staleForm(w)
		return
	}
	text, emails, err := forgetAddresses(r)
	if err != nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		s.render(w, r, "forget", "Erase people", forgetData{Emails: text, Error: err.Error()})
		return
	}
	id, _, err := s.b.RequestForget(r.Context(), emails)
	switch {
	case err == nil, errors.Is(err, jobs.ErrAlreadyQueued):
		// Joined the erasure queued or running: it erases every address waiting.
		s.log.InfoContext(r.Context(), "erasure requested from the pages", slog.Int64("job_id", id), slog.Int("people", len(emails)))
		http.Redirect(w, r, fmt.Sprintf("/jobs/%d", id), http.StatusSeeOther)
	default:
		w.WriteHeader(http.StatusInternalServerError)
		s.render(w, r, "forget", "Erase people", forgetData{Emails: text, Error: err.Error()})
	}
}
