package web

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/subsync/subsync/state"
)

// The HTTP API (/api/v1) for other programs, on the pages' listener: JSON in and out, the
// same work as the command line (an import streamed and staged as the import page stages a
// file, a sync queued, a job followed, a run read, its rejects exported by export.Rejects,
// people erased through jobs.ForgetAddresses), described by an OpenAPI 3.1 document
// (openapi.json, served at /api/v1/openapi.json) that the tests check every answer against.
//
// Every request but the document's needs a token (`subsync tokens create`), on loopback
// too: "Authorization: Bearer TOKEN"; a read-only token may only GET. The pages' password
// is not taken here, nor a token on the pages. Each call is logged with the token's name,
// never its value. Errors are RFC 9457 problem documents (application/problem+json) with a
// type, a title, the status, the detail in the command line's words and the field at fault.
// A POST may carry an Idempotency-Key: the first answer to a key is kept for a day and
// given again to the same key, which then queues nothing (idempotency.go).

// APIPrefix is where the API is served.
const APIPrefix = "/api/v1"

//go:embed openapi.json
var openAPIDoc []byte

// OpenAPIDocument is the API's OpenAPI 3.1 document.
func OpenAPIDocument() []byte { return bytes.Clone(openAPIDoc) }

// problemDocs is where each problem type is described: a heading of docs/api.md.
const problemDocs = "https://github.com/subsync/subsync/blob/main/docs/api.md#"

// A problemType is the kind of an API error: its type URI's fragment, its title.
type problemType struct{ slug, title string }

var (
	probUnauthorized  = problemType{"unauthorized", "A valid token is required"}
	probForbidden     = problemType{"forbidden", "The token may not do this"}
	probNotFound      = problemType{"not-found", "Not found"}
	probInvalid       = problemType{"invalid-request", "The request is not valid"}
	probTooLarge      = problemType{"too-large", "The upload is too large"}
	probNotImportable = problemType{"not-importable", "Not a file subsync can import"}
	probConflict      = problemType{"conflict", "The request conflicts with the state of the job"}
	probKeyInUse      = problemType{"idempotency-key-in-use", "A request with this Idempotency-Key is under way"}
	probKeyReused     = problemType{"idempotency-key-reused", "The Idempotency-Key was used for another request"}
	probService       = problemType{"service-unavailable", "The subscriber service could not be asked"}
	probInternal      = problemType{"internal", "Internal error"}
)

// problem is an RFC 9457 problem document.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Field is the request's field at fault (a form field, a JSON member, a query
	// parameter, a path parameter or a header).
	Field string `json:"field,omitempty"`
}

// problem answers with a problem document.
func (s *Server) problem(w http.ResponseWriter, status int, t problemType, field, detail string) {
	body, _ := json.Marshal(problem{Type: problemDocs + t.slug, Title: t.title, Status: status, Detail: detail, Field: field})
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// apiFail answers 500 for an error the client cannot fix, logged with the request.
func (s *Server) apiFail(w http.ResponseWriter, r *http.Request, err error) {
	s.log.ErrorContext(r.Context(), "API call failed", slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Any("error", err))
	s.problem(w, http.StatusInternalServerError, probInternal, "", "the request failed; the worker's log says why")
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// accepted answers 202 for a job queued: its reference, and Location naming it.
func accepted(w http.ResponseWriter, jobID int64) {
	ref := jobRef{ID: jobID, URL: jobURL(jobID)}
	w.Header().Set("Location", ref.URL)
	writeJSON(w, http.StatusAccepted, queuedAnswer{Job: ref})
}

// queuedAnswer is the answer of a POST that queued a job; AlreadyQueued when the job was
// queued or running before (a sync, an erasure: one at a time) and this request joined it.
type queuedAnswer struct {
	Job           jobRef `json:"job"`
	AlreadyQueued bool   `json:"already_queued,omitempty"`
}

// jobRef names a job.
type jobRef struct {
	ID  int64  `json:"id"`
	URL string `json:"url"`
}

func jobURL(id int64) string { return fmt.Sprintf("%s/jobs/%d", APIPrefix, id) }
func runURL(id int64) string { return fmt.Sprintf("%s/runs/%d", APIPrefix, id) }

// apiCall is what the log line of a call says, filled as the request goes.
type apiCall struct {
	token  string // the token's name
	status int
}

type apiCallKey struct{}

func callOf(ctx context.Context) *apiCall {
	c, _ := ctx.Value(apiCallKey{}).(*apiCall)
	if c == nil {
		return &apiCall{}
	}
	return c
}

// api is the API's handler: the log line, then the token, then the Idempotency-Key.
func (s *Server) api() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+APIPrefix+"/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPIDoc)
	})
	mux.HandleFunc("POST "+APIPrefix+"/imports", s.apiImport)
	mux.HandleFunc("GET "+APIPrefix+"/jobs/{id}", s.apiJob)
	mux.HandleFunc("DELETE "+APIPrefix+"/jobs/{id}", s.apiCancelJob)
	mux.HandleFunc("GET "+APIPrefix+"/runs", s.apiRuns)
	mux.HandleFunc("GET "+APIPrefix+"/runs/{id}", s.apiRun)
	mux.HandleFunc("GET "+APIPrefix+"/runs/{id}/rejects", s.apiRejects)
	mux.HandleFunc("GET "+APIPrefix+"/syncs", s.apiSyncs)
	mux.HandleFunc("POST "+APIPrefix+"/syncs/{name}/runs", s.apiSyncRun)
	mux.HandleFunc("POST "+APIPrefix+"/forget", s.apiForget)
	mux.HandleFunc("GET "+APIPrefix+"/suppression", s.apiSuppression)
	mux.HandleFunc(APIPrefix+"/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowed(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.problem(w, http.StatusMethodNotAllowed, probInvalid, "", fmt.Sprintf("%s takes %s, not %s", r.URL.Path, strings.Join(allow, " or "), r.Method))
			return
		}
		s.problem(w, http.StatusNotFound, probNotFound, "", fmt.Sprintf("no %s %s in the API (see %s/openapi.json)", r.Method, r.URL.Path, APIPrefix))
	})
	return s.apiLog(s.apiAuth(s.idempotent(mux)))
}

// allowed are the methods the API takes on r's path (none for a path it does not have).
func allowed(mux *http.ServeMux, r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		other := r.Clone(r.Context())
		other.Method = m
		if _, pattern := mux.Handler(other); pattern != APIPrefix+"/" && pattern != "" {
			out = append(out, m)
		}
	}
	return out
}

// statusWriter remembers the status of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// apiLog logs each call: method, path (never the query, which may hold an address), status,
// the token's name (never its value) and how long it took.
func (s *Server) apiLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		call := &apiCall{}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), apiCallKey{}, call)))
		attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", sw.status), slog.Int64("duration_ms", time.Since(start).Milliseconds())}
		if call.token != "" {
			attrs = append(attrs, slog.String("token", call.token))
		}
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "API call", attrs...)
	})
}

// bearer is the token of "Authorization: Bearer TOKEN".
func bearer(r *http.Request) (string, bool) {
	scheme, value, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	value = strings.TrimSpace(value)
	return value, value != ""
}

// apiAuth lets through a request with a token in use; a read-only token only to GET. The
// OpenAPI document is open: it holds no data.
func (s *Server) apiAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == APIPrefix+"/openapi.json" {
			next.ServeHTTP(w, r)
			return
		}
		value, ok := bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="subsync"`)
			s.problem(w, http.StatusUnauthorized, probUnauthorized, "Authorization",
				"the API needs a token: Authorization: Bearer TOKEN (subsync tokens create NAME makes one)")
			return
		}
		tok, err := s.b.State().UseAPIToken(r.Context(), value)
		if errors.Is(err, state.ErrNotFound) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="subsync", error="invalid_token"`)
			s.problem(w, http.StatusUnauthorized, probUnauthorized, "Authorization",
				"the token is not known, or was revoked (subsync tokens ls lists the tokens)")
			return
		}
		if err != nil {
			s.apiFail(w, r, err)
			return
		}
		callOf(r.Context()).token = tok.Name
		if tok.ReadOnly && r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.problem(w, http.StatusForbidden, probForbidden, "Authorization",
				fmt.Sprintf("token %q is read-only: it may only read (GET)", tok.Name))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// pathID reads the path's {id}; false (answered 404) when it is not a positive number.
func (s *Server) pathID(w http.ResponseWriter, r *http.Request, what string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.problem(w, http.StatusNotFound, probNotFound, "id", fmt.Sprintf("%s id %q: want a positive number", what, r.PathValue("id")))
		return 0, false
	}
	return id, true
}
