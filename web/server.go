// Package web serves subsync's pages on the worker's listener, beside River UI, /metrics
// and /healthz: the runs (live while one runs) and each run's whole story (counts in the words
// of its kind, rejects by code and paged with their downloads, values dropped, columns not
// sent, people a sync unsubscribed), the syncs (schedules in words, "Run now", the status
// pull's "Pull statuses now" and "Reconcile now") and each sync's page (its last 30 runs as
// a chart drawn on the server, and a table), the import from the browser (/imports/new:
// upload, what was found, the columns with samples and a target each, preview, the mapping
// file, import), the erasure (/forget: the dry run, then the erasure), the suppression list
// and health. docs/operations.md describes them for users.
//
// The pages are rendered on the server with html/template from embedded templates, one
// stylesheet and one small script (static/live.js, which fetches a live page again and swaps
// its changing parts; no build step, no inline script). They read the state database through
// the jobs runtime, so they work on SQLite and Postgres alike. Times are shown in
// Options.TimeZone. Everything that comes from a file, a database or the service is escaped
// by html/template (never template.HTML); an uploaded file is staged and read, never served
// back; every answer carries a Content-Security-Policy without inline scripts or styles,
// frame-ancestors 'none', X-Frame-Options, nosniff and no referrer.
//
// Safety: the listener binds loopback unless configured otherwise, and [CheckAddr] refuses
// any other address without a password. With a password, every page and River UI answer 401
// to a request without it (HTTP Basic with any user name, or "Authorization: Bearer"), while
// /metrics and /healthz stay open for Prometheus and load balancers (they carry no e-mail
// address and no secret). Every action is a POST carrying a CSRF token, and cross-origin
// POSTs are refused. E-mail addresses are shown only to an authenticated user: without a
// password (loopback), addresses and phone numbers are masked, the suppression search matches whole addresses
// only, and the rejects download is refused; and a request is answered only when its Host
// (and a POST's Origin) names a loopback host, against DNS rebinding. No page shows a
// secret of the configuration.
//
// The HTTP API for other programs (/api/v1, api.go) is served beside the pages and takes
// tokens only (`subsync tokens create`), never the pages' password, on loopback too.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/subsync/subsync/internal/export"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Backend is what the pages read and do: the jobs runtime.
type Backend interface {
	State() *state.Store
	// Handler serves /metrics, /healthz and River UI.
	Handler() http.Handler
	EnqueueSync(ctx context.Context, name string, full bool) (int64, error)
	Schedules(now time.Time, n int) []jobs.Schedule
	StatusOverview(ctx context.Context) (jobs.StatusOverview, error)
	// Jobs lists the queued and running jobs.
	Jobs(ctx context.Context) ([]jobs.JobInfo, error)
	EnqueueStatusPull(ctx context.Context) (int64, error)
	EnqueueReconcile(ctx context.Context) (int64, error)
	PlanForget(ctx context.Context, emails []string) ([]jobs.ForgetPlan, error)
	RequestForget(ctx context.Context, emails []string) (int64, []string, error)
	// The import page.
	StageUpload(ctx context.Context, name string, r io.Reader) (state.StagedFile, error)
	RestoreStaged(ctx context.Context, f state.StagedFile) (string, func(), error)
	EnqueueStaged(ctx context.Context, args jobs.ImportArgs, f state.StagedFile) (int64, error)
	CheckList(ctx context.Context, listID int64) error
	Lists(ctx context.Context) ([]sink.List, error)
	CustomFields(ctx context.Context) ([]sink.CustomField, error)
	PingService(ctx context.Context) error
	// The HTTP API.
	Job(ctx context.Context, jobID int64) (jobs.JobInfo, error)
	CancelJob(ctx context.Context, jobID int64) error
	EnqueueImport(ctx context.Context, args jobs.ImportArgs) (int64, error)
	PlanImport(ctx context.Context, args jobs.ImportArgs, row func(jobs.PlanRow) error) (jobs.Plan, error)
	CheckSource(name string) error
	EnqueueSyncArgs(ctx context.Context, args jobs.SyncArgs) (int64, error)
}

// Options configure the pages.
type Options struct {
	// Password protects the pages and River UI (Basic auth with any user name, or a Bearer
	// token). Empty = no authentication, which CheckAddr allows on loopback only.
	Password string
	// Logger receives errors of page requests; nil discards.
	Logger *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// TimeZone is where the pages show times (web.time_zone); nil = the machine's zone.
	TimeZone *time.Location
	// MaxUploadSize bounds a file uploaded on the import page (web.max_upload_size);
	// 0 = MaxUploadSizeDefault.
	MaxUploadSize int64
}

// LoadTimeZone reads web.time_zone: an IANA zone name ("Europe/Oslo"), or "" for the
// machine's zone.
func LoadTimeZone(name string) (*time.Location, error) {
	if name == "" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: want an IANA name such as Europe/Oslo, or empty for the machine's zone", name)
	}
	return loc, nil
}

// Server serves the pages; it is an http.Handler.
type Server struct {
	b       Backend
	opts    Options
	log     *slog.Logger
	pages   map[string]*template.Template
	csrfKey []byte
	handler http.Handler
}

// New builds the pages over b.
func New(b Backend, opts Options) (*Server, error) {
	s := &Server{b: b, opts: opts, log: opts.Logger, csrfKey: make([]byte, 32)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	if s.opts.TimeZone == nil {
		s.opts.TimeZone = time.Local
	}
	if _, err := rand.Read(s.csrfKey); err != nil {
		return nil, fmt.Errorf("csrf key: %w", err)
	}
	if err := s.parseTemplates(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, err
	}
	backend := b.Handler()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", backend)
	mux.Handle("GET /healthz", backend)
	// The API takes tokens, never the pages' password (api.go).
	mux.Handle(APIPrefix+"/", s.api())
	// River UI, then subsync's own pages, which send the security headers (secured).
	pages := http.NewServeMux()
	pages.Handle(jobs.RiverUIPrefix+"/", backend)
	pages.Handle("GET "+jobs.RiverUIPrefix, backend)
	own := http.NewServeMux()
	pages.Handle("/", secured(own))
	own.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	own.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/runs", http.StatusSeeOther)
	})
	own.HandleFunc("GET /runs", s.runs)
	own.HandleFunc("GET /runs/{id}", s.run)
	own.HandleFunc("GET /jobs/{id}", s.job)
	own.HandleFunc("GET /runs/{id}/rejects.csv", s.rejects(export.CSV))
	own.HandleFunc("GET /runs/{id}/rejects.xlsx", s.rejects(export.XLSX))
	own.HandleFunc("GET /syncs", s.syncs)
	own.HandleFunc("GET /syncs/{name}", s.sync)
	own.HandleFunc("POST /syncs/{name}/run", s.runNow)
	own.HandleFunc("GET /imports/new", s.importForm)
	own.HandleFunc("POST /imports", s.upload)
	own.HandleFunc("GET /imports/{token}", s.importPage)
	own.HandleFunc("POST /imports/{token}", s.importAction)
	own.HandleFunc("POST /status/pull", s.pullNow)
	own.HandleFunc("POST /status/reconcile", s.reconcileNow)
	own.HandleFunc("GET /forget", s.forgetForm)
	own.HandleFunc("POST /forget/check", s.forgetPlan)
	own.HandleFunc("POST /forget", s.forget)
	own.HandleFunc("GET /suppression", s.suppression)
	own.HandleFunc("GET /health", s.health)
	protect := http.NewCrossOriginProtection()
	mux.Handle("/", s.authenticate(protect.Handler(pages)))
	s.handler = mux
	if s.opts.Password == "" {
		s.handler = loopbackOnly(mux)
	}
	return s, nil
}

// loopbackOnly guards the pages served without a password (on loopback, as CheckAddr
// demands) against DNS rebinding: a page of another site whose name was made to resolve to
// 127.0.0.1 is same-origin for the browser, so it could read the pages and their CSRF token
// and post the forms. Its requests name that site in Host, and in Origin when they post, so
// a request is answered only when both name a loopback host: 421 otherwise.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		origin := r.Header.Get("Origin")
		if origin != "" && r.Method != http.MethodGet && r.Method != http.MethodHead {
			u, err := url.Parse(origin)
			if err != nil || u.Host == "" {
				http.Error(w, "the request's Origin is not a loopback address", http.StatusMisdirectedRequest)
				return
			}
			if !loopbackHost(u.Host) {
				host = u.Host
			}
		}
		if !loopbackHost(host) {
			http.Error(w, "without a password the pages answer only on a loopback address "+
				"(localhost, 127.0.0.1, [::1]); the request was addressed to another name. "+
				"To serve them under another name, set a password (SUBSYNC_WEB_PASSWORD, or web.password_file)",
				http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host (name or address, with or without a port) is
// localhost or a loopback address.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// CheckAddr refuses to serve the pages on a non-loopback address without a password. The
// error names what to configure.
func CheckAddr(addr, password string) error {
	if password != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("the pages would listen on %q, which is not a loopback address, without authentication: "+
		"set a password for them (SUBSYNC_WEB_PASSWORD, or web.password_file in the configuration), "+
		"or listen on 127.0.0.1", addr)
}

type ctxKey struct{}

// authenticated reports whether the request carried the configured password.
func authenticated(r *http.Request) bool {
	v, _ := r.Context().Value(ctxKey{}).(bool)
	return v
}

// authenticate answers 401 to a request without the password, when one is configured, and
// marks the request authenticated when it carried it.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Password == "" {
			next.ServeHTTP(w, r)
			return
		}
		var given string
		if _, p, ok := r.BasicAuth(); ok {
			given = p
		} else if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			given = strings.TrimSpace(t)
		}
		if subtle.ConstantTimeCompare(hashed(given), hashed(s.opts.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="subsync", charset="UTF-8"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, true)))
	})
}

// contentSecurityPolicy lets the pages load their own stylesheet, script and images only:
// no inline script or style, no other origin, no frame around them, forms posted to
// themselves.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secured sends the security headers of subsync's pages with every answer: the
// Content-Security-Policy, no framing (X-Frame-Options for old browsers), no content-type
// sniffing, no referrer, no caching (pages show personal data).
func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// hashed makes the comparison's time independent of the lengths.
func hashed(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// csrfToken is the token every form carries: an HMAC of the process's random key, so it
// cannot be guessed by another site and is checked without state.
func (s *Server) csrfToken() string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte("subsync-csrf"))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Server) checkCSRF(r *http.Request) bool {
	return hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(s.csrfToken()))
}
