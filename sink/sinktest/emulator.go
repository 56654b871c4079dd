package sinktest

import (
	"bytes"
	"crypto/subtle"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Path prefixes of the two interfaces. One Emulator serves both.
const (
	V2Prefix = "/api/public/v2"
	V3Prefix = "/api/v3"
)

// MaxBulkRows is the most rows one bulkinsert request may carry.
const MaxBulkRows = 1000

// Default credentials of an Emulator made without WithCredentials.
const (
	DefaultUser = "test-user"
	DefaultKey  = "test-key"
)

// TimeFormat is the service's timestamp form: ISO 8601, UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z"

type options struct {
	user, key     string
	now           func() time.Time
	faults        Faults
	statusWrapped bool
	statusWrapKey string // the member a wrapped feed holds its entries under; "" = changes
	statusPaged   int    // entries per page of /subscriberstatus; 0 = one answer
	statusLink    int    // entries per page of /subscriberstatus, paged by a Link header only; 0 = off
	statusDays    bool   // from_date/to_date read as whole days
	statusCap     int    // at most this many entries, oldest first, with no paging hint; 0 = all
	rowMessages   bool   // a 422 carries a message naming the row and reason
	statusQuery   bool   // single create reads status only from the query
	listArrayOnly bool   // only subscriber_list_id[] names the list(s)
	putOnly       bool   // PATCH is refused with 405; updates take PUT
	plain401      bool
	activeRevives bool
	omitRevives   bool // a push without a status makes an unsubscribed or bounced membership active
	byListAll     bool // by_list ignores its status filter
	values        valueRules
	logger        *slog.Logger
}

// valueRules are the stricter value forms some alternatives of the service take.
type valueRules struct {
	consentBooleans bool     // the consent fields take only true or false
	genders         []string // gender takes only these values; nil = any
	multipleArrays  bool     // a multiple_choice value must be an array of strings
}

// Option configures an Emulator.
type Option func(*options)

// WithCredentials sets the Basic auth user (the account's user id) and password (the API key)
// every request must carry.
func WithCredentials(user, key string) Option {
	return func(o *options) { o.user, o.key = user, key }
}

// WithClock sets the clock behind every timestamp (date_created, date_updated, the status
// feed and its default 30-day window). The MaxRPS cap and Latency use real time.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithFaults sets the initial fault injection; see Faults and Emulator.SetFaults.
func WithFaults(f Faults) Option { return func(o *options) { o.faults = f } }

// WithStatusWrapped makes /subscriberstatus answer {"changes":[...]} instead of a bare array.
func WithStatusWrapped(on bool) Option { return func(o *options) { o.statusWrapped = on } }

// WithStatusWrapKey makes /subscriberstatus answer {key:[...]}: a shape a client may not
// know (WithStatusWrapped uses "changes").
func WithStatusWrapKey(key string) Option {
	return func(o *options) { o.statusWrapped, o.statusWrapKey = key != "", key }
}

// WithStatusPaged makes /subscriberstatus answer perPage entries at a time, as
// {"data":[...],"meta":{"current_page","last_page","per_page","total"},"links":{"next":URL|null}},
// the page chosen by the query's page (from 1). 0 = one answer with every entry.
func WithStatusPaged(perPage int) Option { return func(o *options) { o.statusPaged = max(perPage, 0) } }

// WithStatusLinkPaged makes /subscriberstatus answer perPage entries at a time as a bare
// array, the page chosen by the query's page (from 1), and say that more follow only in an
// RFC 8288 header, Link: <URL>; rel="next" (with rel="last"), as many REST services page.
// 0 = one answer with every entry.
func WithStatusLinkPaged(perPage int) Option {
	return func(o *options) { o.statusLink = max(perPage, 0) }
}

// WithStatusCap makes /subscriberstatus answer at most n entries (the oldest of the
// window) and say nothing of the rest: a feed capped without a paging hint. 0 = no cap.
func WithStatusCap(n int) Option { return func(o *options) { o.statusCap = max(n, 0) } }

// WithStatusDays makes /subscriberstatus read from_date and to_date as whole days, in UTC:
// from the start of from_date's day to the end of to_date's, whatever time they carry.
func WithStatusDays(on bool) Option { return func(o *options) { o.statusDays = on } }

// WithRowMessages makes a 422 carry a message naming the refused row and the reason,
// {"status":"422 Unprocessable entity","message":"row 3: invalid email"}. By default a 422
// answers exactly the spec's {"status":"422 Unprocessable entity"} and nothing more.
func WithRowMessages(on bool) Option { return func(o *options) { o.rowMessages = on } }

// WithStatusFromQuery makes single create/update (POST /subscribers) read status and
// status_mobile only from the query, as the public PHP client sends them, ignoring the body's.
// By default the body's (the seed's form) is read, and the query's when the body has none.
func WithStatusFromQuery(on bool) Option { return func(o *options) { o.statusQuery = on } }

// WithListIDArrayOnly makes bulkinsert and single create read the list only from the
// subscriber_list_id[] form (repeated); a bare subscriber_list_id is then ignored.
func WithListIDArrayOnly(on bool) Option { return func(o *options) { o.listArrayOnly = on } }

// WithPutOnly makes every update take PUT only: PATCH is refused with 405.
func WithPutOnly(on bool) Option { return func(o *options) { o.putOnly = on } }

// WithPlainText401 makes a 401 carry a plain-text body instead of {"status":"401 Unauthorized"}.
func WithPlainText401(on bool) Option { return func(o *options) { o.plain401 = on } }

// WithActiveRevives makes bulkinsert's status=active (and status_mobile=active) revive an
// unsubscribed or bounced membership. By default only reactivate does.
func WithActiveRevives(on bool) Option { return func(o *options) { o.activeRevives = on } }

// WithOmissionRevives makes a push without a status revive: bulkinsert without status (and
// single create/update without one) makes an unsubscribed or bounced membership active, as the
// seed says a single create/update without a status does. status=active revives too. By
// default a push without a status leaves an existing membership's status as it is.
func WithOmissionRevives(on bool) Option { return func(o *options) { o.omitRevives = on } }

// WithByListIgnoresStatus makes GET /subscribers/by_list answer every subscriber of the list
// whatever its status query asks for (each row still shows its own status).
func WithByListIgnoresStatus(on bool) Option { return func(o *options) { o.byListAll = on } }

// WithConsentBooleans makes the consent fields (SAMTYKKEEPOST, …) take only JSON true or
// false: a string ("1", "ja") is refused with 422. By default any string, number or boolean
// is taken and kept as its text.
func WithConsentBooleans(on bool) Option { return func(o *options) { o.values.consentBooleans = on } }

// WithGenderValues makes gender take only the given values (exactly): any other is refused
// with 422. Without values any gender is taken.
func WithGenderValues(values ...string) Option {
	return func(o *options) { o.values.genders = values }
}

// WithMultipleChoiceArrays makes a multiple_choice custom field take only a JSON array of
// strings: a comma-separated string is refused with 422.
func WithMultipleChoiceArrays(on bool) Option {
	return func(o *options) { o.values.multipleArrays = on }
}

// WithLogger logs one line per request (method, path, status, rows, fault, duration; never
// credentials). Without it the Emulator logs nothing.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Emulator is the in-process subscriber service. It implements http.Handler and is safe for
// concurrent use. Make one with New, or a running server with NewServer.
type Emulator struct {
	opts options

	mu sync.Mutex // guards st
	st *store

	fmu     sync.Mutex // guards the fault state
	faults  Faults
	rng     *rand.Rand
	limiter *rate.Limiter

	rmu  sync.Mutex // guards reqs
	reqs []Request

	smu         sync.Mutex // guards rawStatuses
	rawStatuses []string

	stop     chan struct{} // closed by shutdown: ends every Latency wait
	stopOnce sync.Once

	inFlight atomic.Int64
}

// New returns an Emulator with an empty store: no lists, no custom fields, no subscribers.
func New(opts ...Option) *Emulator {
	o := options{user: DefaultUser, key: DefaultKey, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	e := &Emulator{opts: o, st: newStore(), stop: make(chan struct{})}
	e.st.rules = &e.opts.values
	e.SetFaults(o.faults)
	return e
}

func (e *Emulator) now() time.Time { return e.opts.now().UTC() }

// reqInfo travels with one request through the handlers.
type reqInfo struct {
	rows int
}

type handler func(w http.ResponseWriter, r *http.Request, ri *reqInfo)

// ServeHTTP answers one request of either interface.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	start := time.Now()
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query()}
	d := e.decide(start)
	defer func() {
		e.logRequest(r, rec, time.Since(start))
	}()
	if d.latency > 0 && !e.wait(r, d.latency) {
		rec.Fault = faultCanceled
		e.addRequest(rec)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	if d.kind != "" && d.kind != faultDrop {
		rec.Fault = d.kind
		writeFault(sw, d)
		rec.Status = sw.status
		e.addRequest(rec)
		return
	}
	var ri reqInfo
	h := e.authed(e.route(r))
	if !e.opts.rowMessages {
		h = seedBody422(h)
	}
	if d.kind == faultDrop {
		// The drop is decided before and executed after the effect: the store changes and the
		// client sees a broken response, as when a connection dies on the way back.
		buf := &bufferWriter{header: http.Header{}}
		h(buf, r, &ri)
		rec.Fault, rec.Status, rec.Rows = faultDrop, buf.status, ri.rows
		e.addRequest(rec)
		drop(w, buf)
		return
	}
	h(sw, r, &ri)
	rec.Status, rec.Rows = sw.status, ri.rows
	e.addRequest(rec)
}

// wait holds r for the injected latency. It reads the body first: the server notices a
// client that went away only once the body is consumed. It reports false when the client
// went away or the emulator shuts down.
func (e *Emulator) wait(r *http.Request, latency time.Duration) bool {
	if r.Body != nil && r.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			return false
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	t := time.NewTimer(latency)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-e.stop:
	}
	return false
}

// InFlight returns how many requests the Emulator is serving right now (including those
// held by Latency).
func (e *Emulator) InFlight() int { return int(e.inFlight.Load()) }

// shutdown ends every Latency wait, so that a server can close without waiting for them.
func (e *Emulator) shutdown() { e.stopOnce.Do(func() { close(e.stop) }) }

func (e *Emulator) logRequest(r *http.Request, rec Request, d time.Duration) {
	e.opts.logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("method", rec.Method), slog.String("path", rec.Path), slog.Int("status", rec.Status),
		slog.Int("rows", rec.Rows), slog.String("fault", rec.Fault), slog.Duration("duration", d))
}

// authed wraps h with the Basic auth check.
func (e *Emulator) authed(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, ri *reqInfo) {
		user, key, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(e.opts.user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(key), []byte(e.opts.key)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="subscribers"`)
			if e.opts.plain401 {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte("401 Unauthorized\n"))
				return
			}
			writeStatus(w, http.StatusUnauthorized, "401 Unauthorized")
			return
		}
		h(w, r, ri)
	}
}

// route picks the handler of r. Collection paths match with or without a trailing slash.
func (e *Emulator) route(r *http.Request) handler {
	if e.opts.putOnly && r.Method == http.MethodPatch {
		return func(w http.ResponseWriter, _ *http.Request, _ *reqInfo) {
			writeStatus(w, http.StatusMethodNotAllowed, "405 Method not allowed")
		}
	}
	p := r.URL.Path
	var v3 bool
	switch {
	case strings.HasPrefix(p, V2Prefix+"/"):
		p = p[len(V2Prefix):]
	case strings.HasPrefix(p, V3Prefix+"/"):
		p, v3 = p[len(V3Prefix):], true
	default:
		return notFound
	}
	p = strings.TrimSuffix(p[1:], "/")
	seg := strings.Split(p, "/")
	if v3 {
		return e.routeV3(r.Method, seg)
	}
	return e.routeV2(r.Method, seg)
}

func (e *Emulator) routeV2(method string, seg []string) handler {
	switch {
	case len(seg) == 1 && seg[0] == "subscriberlists":
		return methods(method, map[string]handler{"GET": e.getLists, "POST": e.createList})
	case len(seg) == 2 && seg[0] == "subscriberlists":
		id, ok := parseID(seg[1])
		if !ok {
			return notFound
		}
		return methods(method, map[string]handler{
			"GET": e.withID(id, e.getList), "PATCH": e.withID(id, e.updateList),
			"PUT": e.withID(id, e.updateList), "DELETE": e.withID(id, e.deleteList),
		})
	case len(seg) == 1 && seg[0] == "subscribers":
		return methods(method, map[string]handler{"POST": e.createSubscriber})
	case len(seg) == 2 && seg[0] == "subscribers" && seg[1] == "bulkinsert":
		return methods(method, map[string]handler{"POST": e.bulkInsert})
	case len(seg) == 2 && seg[0] == "subscribers" && seg[1] == "by_list":
		return methods(method, map[string]handler{"GET": e.byList})
	case len(seg) == 2 && seg[0] == "subscribers" && seg[1] == "by_email":
		return methods(method, map[string]handler{"POST": e.byEmail})
	case len(seg) == 2 && seg[0] == "subscribers":
		id, ok := parseID(seg[1])
		if !ok {
			return notFound
		}
		return methods(method, map[string]handler{
			"GET": e.withID(id, e.getSubscriber), "DELETE": e.withID(id, e.deleteSubscriber),
		})
	case len(seg) == 3 && seg[0] == "subscribers" && seg[2] == "unsubscribe":
		id, ok := parseID(seg[1])
		if !ok {
			return notFound
		}
		return methods(method, map[string]handler{"POST": e.withID(id, e.unsubscribe)})
	case len(seg) == 1 && seg[0] == "custom_fields":
		return methods(method, map[string]handler{"GET": e.getFields, "POST": e.createField})
	case len(seg) == 2 && seg[0] == "custom_fields":
		id, ok := parseID(seg[1])
		if !ok {
			return notFound
		}
		return methods(method, map[string]handler{
			"GET": e.withID(id, e.getField), "PATCH": e.withID(id, e.updateField),
			"PUT": e.withID(id, e.updateField), "DELETE": e.withID(id, e.deleteField),
		})
	case len(seg) == 1 && seg[0] == "subscriberstatus":
		return methods(method, map[string]handler{"GET": e.statusFeed})
	}
	return notFound
}

func (e *Emulator) routeV3(method string, seg []string) handler {
	if len(seg) != 2 {
		return notFound
	}
	id, ok := parseID(seg[1])
	if !ok {
		return notFound
	}
	switch seg[0] {
	case "subscribers":
		return methods(method, map[string]handler{
			"GET": e.withID(id, e.legacySubscriber), "DELETE": e.withID(id, e.deleteSubscriber),
		})
	case "subscriberlists":
		return methods(method, map[string]handler{"DELETE": e.withID(id, e.deleteList)})
	}
	return notFound
}

type idHandler func(w http.ResponseWriter, r *http.Request, ri *reqInfo, id int64)

func (e *Emulator) withID(id int64, h idHandler) handler {
	return func(w http.ResponseWriter, r *http.Request, ri *reqInfo) { h(w, r, ri, id) }
}

func methods(method string, hs map[string]handler) handler {
	if h, ok := hs[method]; ok {
		return h
	}
	return func(w http.ResponseWriter, _ *http.Request, _ *reqInfo) {
		allow := make([]string, 0, len(hs))
		for _, m := range []string{"GET", "POST", "PATCH", "PUT", "DELETE"} {
			if _, ok := hs[m]; ok {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeStatus(w, http.StatusMethodNotAllowed, "405 Method not allowed")
	}
}

func parseID(s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}

func notFound(w http.ResponseWriter, _ *http.Request, _ *reqInfo) {
	writeStatus(w, http.StatusNotFound, "404 Not found")
}
