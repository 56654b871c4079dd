package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	legacyrouter "github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/internal/testlog"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
	"github.com/subsync/subsync/web"
)

// apiEnv is a runtime on one queue, its pages and API on a test server, a token, the log of
// both, and the OpenAPI document every answer is checked against.
type apiEnv struct {
	t       *testing.T
	backend string
	dir     string
	dbURL   string
	emu     *sinktest.Server
	list    int64
	rt      *jobs.Runtime
	srv     *httptest.Server
	token   string
	log     *testlog.Buffer
	router  routers.Router
}

func newAPIEnv(t *testing.T, backend string, opts web.Options, configure ...func(e *apiEnv, cfg *jobs.Config)) *apiEnv {
	t.Helper()
	e := &apiEnv{t: t, backend: backend, dir: t.TempDir(), log: &testlog.Buffer{}}
	e.emu = sinktest.NewServer(t)
	e.list = e.emu.CreateList("Nyhetsbrev")
	logger := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := jobs.Config{DataDir: e.dir, LeaseTTL: time.Second, PollInterval: 20 * time.Millisecond, ShutdownTimeout: 5 * time.Second,
		Logger: logger,
		Sink: sink.Config{BaseURL: e.emu.URL, UserID: e.emu.User, APIKey: e.emu.Key, RequestsPerSecond: -1,
			HTTPClient: e.emu.Client(), BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond, Logger: logger}}
	if backend == "postgres" {
		cfg.DatabaseURL, _ = testdb.PostgresSchema(t)
		e.dbURL = cfg.DatabaseURL
	}
	for _, c := range configure {
		c(e, &cfg)
	}
	rt, err := jobs.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(rt.Close)
	e.rt = rt
	e.token, err = rt.State().CreateAPIToken(context.Background(), "crm", false)
	require.NoError(t, err)
	opts.Logger = logger
	h, err := web.New(rt, opts)
	require.NoError(t, err)
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)

	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(web.OpenAPIDocument())
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()), "the OpenAPI document is valid")
	e.router, err = legacyrouter.NewRouter(doc)
	require.NoError(t, err)
	return e
}

// work starts a worker until the test ends.
func (e *apiEnv) work() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.rt.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		require.NoError(e.t, <-done)
	})
}

// call sends a request with token (none when "") and checks the answer against the OpenAPI
// document: its status is documented for the operation, its headers and body fit.
func (e *apiEnv) call(method, path, token string, header http.Header, body []byte) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	require.NoError(e.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.srv.Client().Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	e.validate(req, body, resp, got)
	return resp, got
}

// validate checks one answer against the OpenAPI document.
func (e *apiEnv) validate(req *http.Request, reqBody []byte, resp *http.Response, body []byte) {
	e.t.Helper()
	// The router matches on the document's server, "/": it takes the path alone.
	match, err := http.NewRequest(req.Method, req.URL.RequestURI(), bytes.NewReader(reqBody))
	require.NoError(e.t, err)
	match.Header = req.Header.Clone()
	route, params, err := e.router.FindRoute(match)
	require.NoError(e.t, err, "%s %s is in the OpenAPI document", req.Method, req.URL.Path)
	opts := &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	in := &openapi3filter.RequestValidationInput{Request: match, PathParams: params, Route: route, Options: opts}
	if resp.StatusCode < 300 {
		// A request the API took is one the document describes.
		require.NoError(e.t, openapi3filter.ValidateRequest(context.Background(), in),
			"%s %s was taken (%d) but is not as the OpenAPI document says", req.Method, req.URL.Path, resp.StatusCode)
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: opts,
	})
	require.NoError(e.t, err, "%s %s answered %d %s: not as the OpenAPI document says", req.Method, req.URL.Path, resp.StatusCode, body)
}

// form is a multipart body: the fields in order, then the file.
func form(t *testing.T, fields [][2]string, name string, content []byte) (http.Header, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		require.NoError(t, w.WriteField(f[0], f[1]))
	}
	if name != "" {
		fw, err := w.CreateFormFile("file", name)
		require.NoError(t, err)
		_, err = fw.Write(content)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return http.Header{"Content-Type": {w.FormDataContentType()}}, b.Bytes()
}

type queuedAnswer struct {
	Job struct {
		ID  int64  `json:"id"`
		URL string `json:"url"`
	} `json:"job"`
}

type jobAnswer struct {
	Job struct {
		ID    int64  `json:"id"`
		State string `json:"state"`
	} `json:"job"`
	Run *struct {
		ID         int64  `json:"id"`
		State      string `json:"state"`
		RejectsURL string `json:"rejects_url"`
		Counts     struct {
			Sent     int64 `json:"sent"`
			Rejected int64 `json:"rejected"`
		} `json:"counts"`
	} `json:"run"`
}

type problemAnswer struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Field  string `json:"field"`
}

func decodeJSON[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(body, &v), "%s", body)
	return v
}

// count counts the rows of a table.
func (e *apiEnv) count(table string) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.rt.State().DB().QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&n))
	return n
}

// importCSV has three good rows and one bad one (line 4: no e-mail address).
const importCSV = "E-post,Fornavn\nkari@example.no,Kari\nola@example.no,Ola\nikke-en-epost,Per\nlise@example.no,Lise\n"

// TestAPIImportToRejects: a CSV with one bad row uploaded through POST /api/v1/imports is
// queued (202, Location), followed through GET /api/v1/jobs/N to its completed run, and its
// rejects fetched: the CSV is byte for byte what `subsync runs ID --rejects -` prints; the
// emulator holds the good rows; every answer fits the OpenAPI document. On both queues.
func TestAPIImportToRejects(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newAPIEnv(t, backend, web.Options{})
			e.work()
			h, body := form(t, [][2]string{{"list", fmt.Sprint(e.list)}}, "kontakter.csv", []byte(importCSV))
			h.Set("Idempotency-Key", "import-1")
			resp, got := e.call("POST", "/api/v1/imports", e.token, h, body)
			require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", got)
			q := decodeJSON[queuedAnswer](t, got)
			require.Equal(t, fmt.Sprintf("/api/v1/jobs/%d", q.Job.ID), q.Job.URL)
			require.Equal(t, q.Job.URL, resp.Header.Get("Location"))

			var job jobAnswer
			deadline := time.Now().Add(time.Minute)
			for {
				resp, got = e.call("GET", q.Job.URL, e.token, nil, nil)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
				job = decodeJSON[jobAnswer](t, got)
				if job.Job.State == "completed" {
					break
				}
				require.NotContains(t, []string{"cancelled", "discarded"}, job.Job.State, "%s", got)
				require.True(t, time.Now().Before(deadline), "the job did not complete: %s", got)
				time.Sleep(50 * time.Millisecond) // a client polling
			}
			require.NotNil(t, job.Run, "a completed job has its run")
			require.Equal(t, "completed", job.Run.State)
			require.Equal(t, int64(3), job.Run.Counts.Sent)
			require.Equal(t, int64(1), job.Run.Counts.Rejected)

			resp, got = e.call("GET", fmt.Sprintf("/api/v1/runs/%d", job.Run.ID), e.token, nil, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Contains(t, string(got), `"summary"`)

			resp, csvBytes := e.call("GET", job.Run.RejectsURL, e.token, nil, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "text/csv; charset=utf-8", resp.Header.Get("Content-Type"))
			require.Equal(t, e.cli(t, "runs", fmt.Sprint(job.Run.ID), "--rejects", "-"), string(csvBytes),
				"byte for byte the CLI's export")
			require.Contains(t, string(csvBytes), "ikke-en-epost,Per,rejected,4,")

			resp, got = e.call("GET", job.Run.RejectsURL, e.token, http.Header{"Accept": {"application/json"}}, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Contains(t, string(got), `"line":4`)

			resp, got = e.call("GET", "/api/v1/runs?kind=import&limit=1", e.token, nil, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Contains(t, string(got), fmt.Sprintf(`"id":%d`, job.Run.ID))

			var emails []string
			for _, s := range e.emu.ListSubscribers(e.list) {
				emails = append(emails, s.Email)
			}
			require.ElementsMatch(t, []string{"kari@example.no", "ola@example.no", "lise@example.no"}, emails)
			require.Contains(t, e.log.String(), `msg="API call" method=POST path=/api/v1/imports status=202`)
			require.Contains(t, e.log.String(), "token=crm")
		})
	}
}

// cli runs the subsync command line on the env's database and returns its standard output.
func (e *apiEnv) cli(t *testing.T, args ...string) string {
	t.Helper()
	config := filepath.Join(e.dir, "cli.toml")
	db := fmt.Sprintf("[database]\ndata_dir = %q\n", e.dir)
	if e.dbURL != "" {
		db = fmt.Sprintf("[database]\nurl = %q\n", e.dbURL)
	}
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf("[api]\nbase_url = %q\nuser_id = %q\n[worker]\nmetrics_address = \"off\"\n%s",
		e.emu.URL, e.emu.User, db)), 0o600))
	var out, errb bytes.Buffer
	code := cliMain(append([]string{"--config", config}, args...), &out, &errb)
	require.Zero(t, code, "subsync %s: %s", strings.Join(args, " "), errb.String())
	return out.String()
}

// TestAPIIdempotencyKey: the same POST twice with one Idempotency-Key queues one job and
// stages one file; the second answer is the first's, marked replayed; a key used for another
// request is refused. On both queues.
func TestAPIIdempotencyKey(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newAPIEnv(t, backend, web.Options{})
			ctx := context.Background()
			h, body := form(t, [][2]string{{"list", fmt.Sprint(e.list)}}, "kontakter.csv", []byte(importCSV))
			h.Set("Idempotency-Key", "9b2f0e4c-nightly-export")
			resp1, got1 := e.call("POST", "/api/v1/imports", e.token, h, body)
			require.Equal(t, http.StatusAccepted, resp1.StatusCode, "%s", got1)
			resp2, got2 := e.call("POST", "/api/v1/imports", e.token, h, body)
			require.Equal(t, http.StatusAccepted, resp2.StatusCode, "%s", got2)
			require.Equal(t, got1, got2, "the first answer again")
			require.Equal(t, resp1.Header.Get("Location"), resp2.Header.Get("Location"))
			require.Equal(t, "true", resp2.Header.Get("Idempotent-Replayed"))
			queued, err := e.rt.Jobs(ctx)
			require.NoError(t, err)
			require.Len(t, queued, 1, "one job queued")
			require.Equal(t, 1, e.count("subsync_staged_file"), "one file staged")

			h2, body2 := form(t, [][2]string{{"list", fmt.Sprint(e.list)}}, "andre.csv", []byte(importCSV))
			h2.Set("Idempotency-Key", "another-key")
			resp3, got3 := e.call("POST", "/api/v1/imports", e.token, h2, body2)
			require.Equal(t, http.StatusAccepted, resp3.StatusCode, "%s", got3)
			require.NotEqual(t, got1, got3, "another key, another job")
			queued, err = e.rt.Jobs(ctx)
			require.NoError(t, err)
			require.Len(t, queued, 2)
		})
	}
}

// TestAPITokens: no token, an unknown one or a revoked one gets 401; a read-only token may
// GET but gets 403 on POST; the pages' password is not a token; the token is in no log line
// and in no table, where only its hash is.
func TestAPITokens(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newAPIEnv(t, backend, web.Options{Password: password})
			ctx := context.Background()
			readOnly, err := e.rt.State().CreateAPIToken(ctx, "dashboard", true)
			require.NoError(t, err)
			h, body := form(t, [][2]string{{"list", fmt.Sprint(e.list)}}, "kontakter.csv", []byte(importCSV))

			for _, tc := range []struct{ name, token string }{
				{"no token", ""}, {"an unknown token", state.TokenPrefix + "not-a-token"}, {"the pages' password", password},
			} {
				resp, got := e.call("GET", "/api/v1/runs", tc.token, nil, nil)
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, tc.name)
				require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
				require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
				p := decodeJSON[problemAnswer](t, got)
				require.Equal(t, "Authorization", p.Field)
				require.Equal(t, http.StatusUnauthorized, p.Status)
			}
			resp, got := e.call("GET", "/api/v1/runs", readOnly, nil, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
			resp, got = e.call("POST", "/api/v1/imports", readOnly, h, body)
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
			p := decodeJSON[problemAnswer](t, got)
			require.Equal(t, `token "dashboard" is read-only: it may only read (GET)`, p.Detail)
			require.Zero(t, e.count("subsync_staged_file"), "nothing staged for a refused token")

			resp, got = e.call("GET", "/api/v1/runs", e.token, nil, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
			require.NoError(t, e.rt.State().RevokeAPIToken(ctx, "crm"))
			resp, got = e.call("GET", "/api/v1/runs", e.token, nil, nil)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "revoked")
			require.Contains(t, decodeJSON[problemAnswer](t, got).Detail, "revoked")

			logs := e.log.String()
			require.Contains(t, logs, "token=dashboard", "a call is logged with the token's name")
			for _, tok := range []string{e.token, readOnly} {
				require.NotContains(t, logs, tok, "no log line holds a token")
				require.NotContains(t, logs, tok[len(state.TokenPrefix):])
				e.noTableHolds(tok)
			}
			var hash string
			require.NoError(t, e.rt.State().DB().QueryRowContext(ctx, `SELECT token_hash FROM subsync_api_token WHERE name = 'dashboard'`).Scan(&hash))
			require.Equal(t, state.TokenHash(readOnly), hash, "the table holds the hash")
		})
	}
}

// noTableHolds checks every cell of every table of the database for s.
func (e *apiEnv) noTableHolds(s string) {
	e.t.Helper()
	ctx := context.Background()
	db := e.rt.State().DB()
	q := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if e.backend == "postgres" {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`
	}
	rows, err := db.QueryContext(ctx, q)
	require.NoError(e.t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(e.t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(e.t, rows.Err())
	rows.Close()
	require.Contains(e.t, tables, "subsync_api_token")
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		require.NoError(e.t, err, table)
		cols, err := rows.Columns()
		require.NoError(e.t, err)
		for rows.Next() {
			cells := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range cells {
				ptrs[i] = &cells[i]
			}
			require.NoError(e.t, rows.Scan(ptrs...))
			for i, c := range cells {
				require.NotContains(e.t, fmt.Sprintf("%s", c), s, "table %s column %s holds the token", table, cols[i])
			}
		}
		require.NoError(e.t, rows.Err())
		rows.Close()
	}
}

// TestAPIUploadOverTheLimit: an upload larger than web.max_upload_size gets 413 (a problem
// naming the file field) and leaves nothing in the staging store, nor in the data
// directory.
func TestAPIUploadOverTheLimit(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, "sqlite", web.Options{MaxUploadSize: 1 << 10})
	big := []byte("E-post\n" + strings.Repeat("someone@example.com\n", 100))
	h, body := form(t, [][2]string{{"list", fmt.Sprint(e.list)}}, "big.csv", big)
	h.Set("Idempotency-Key", "big-1")
	resp, got := e.call("POST", "/api/v1/imports", e.token, h, body)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", got)
	p := decodeJSON[problemAnswer](t, got)
	require.Equal(t, "file", p.Field)
	require.Equal(t, "the file is larger than the 1 KiB the API takes (web.max_upload_size): import it with subsync import", p.Detail)
	require.True(t, strings.HasSuffix(p.Type, "#too-large"))
	require.Zero(t, e.count("subsync_staged_file"), "nothing staged")
	require.Zero(t, e.count("subsync_staged_chunk"), "nothing staged")
	left, err := filepath.Glob(filepath.Join(e.dir, "staged", "*"))
	require.NoError(t, err)
	require.Empty(t, left, "no local copy left")
	queued, err := e.rt.Jobs(context.Background())
	require.NoError(t, err)
	require.Empty(t, queued)

	// The key was not kept for a failed request: the same key may be tried again.
	h, body = form(t, [][2]string{{"list", fmt.Sprint(e.list)}}, "small.csv", []byte(importCSV))
	h.Set("Idempotency-Key", "big-1")
	resp, got = e.call("POST", "/api/v1/imports", e.token, h, body)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", got)
}

// cliMain is the subsync command line.
func cliMain(args []string, stdout, stderr io.Writer) int {
	return cli.Main(context.Background(), args, strings.NewReader(""), stdout, stderr)
}

// TestAPISyncsForgetSuppression: GET /api/v1/syncs lists the configured sync with its
// schedule and next runs; POST /syncs/NAME/runs queues it (202, Location), a second POST
// while it is queued answers that job (already_queued), an unknown sync is 404 naming the
// field; forget's dry run answers the plan and changes nothing, forget queues the erasure
// (202) and an address that is no address is refused in the CLI's words; the suppression
// lookup finds an entry and says so of an address without one. On both queues.
func TestAPISyncsForgetSuppression(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newAPIEnv(t, backend, web.Options{}, func(e *apiEnv, cfg *jobs.Config) {
				path := filepath.Join(e.dir, "kontakter.csv")
				require.NoError(t, os.WriteFile(path, []byte(importCSV), 0o600))
				cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: e.list, Source: sources.Config{Path: path},
					Schedule: "30 2 * * *", TimeZone: "Europe/Oslo"}}
			})
			ctx := context.Background()
			resp, got := e.call("GET", "/api/v1/syncs", e.token, nil, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
			syncs := decodeJSON[struct {
				Syncs []struct {
					Name     string   `json:"name"`
					Schedule string   `json:"schedule"`
					Next     []string `json:"next"`
					RunsURL  string   `json:"runs_url"`
				} `json:"syncs"`
			}](t, got)
			require.Len(t, syncs.Syncs, 1)
			require.Equal(t, "crm", syncs.Syncs[0].Name)
			require.Equal(t, "30 2 * * *", syncs.Syncs[0].Schedule)
			require.Len(t, syncs.Syncs[0].Next, 3)

			json := http.Header{"Content-Type": {"application/json"}}
			resp, got = e.call("POST", syncs.Syncs[0].RunsURL, e.token, json, []byte(`{"full": true}`))
			require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", got)
			first := decodeJSON[queuedAnswer](t, got)
			require.Equal(t, first.Job.URL, resp.Header.Get("Location"))
			resp, got = e.call("POST", syncs.Syncs[0].RunsURL, e.token, nil, nil)
			require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", got)
			require.Contains(t, string(got), `"already_queued":true`)
			require.Equal(t, first.Job.ID, decodeJSON[queuedAnswer](t, got).Job.ID, "the one queued")
			resp, got = e.call("POST", "/api/v1/syncs/nosuch/runs", e.token, nil, nil)
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
			p := decodeJSON[problemAnswer](t, got)
			require.Equal(t, "name", p.Field)
			require.Equal(t, `no sync named "nosuch" in the configuration`, p.Detail)
			resp, got = e.call("POST", syncs.Syncs[0].RunsURL, e.token, json, []byte(`{"full": true, "verify": true}`))
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Equal(t, "verify", decodeJSON[problemAnswer](t, got).Field)

			resp, got = e.call("POST", "/api/v1/forget", e.token, json, []byte(`{"emails": ["kari@example.no", "ikke en adresse"]}`))
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			p = decodeJSON[problemAnswer](t, got)
			require.Equal(t, "emails", p.Field)
			require.Equal(t, "address 2 is not an e-mail address", p.Detail, "the place, never the text")
			resp, got = e.call("POST", "/api/v1/forget", e.token, json, []byte(`{"emails": ["Kari@Example.no"], "dry_run": true}`))
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
			require.Contains(t, string(got), `"email":"kari@example.no"`)
			require.Zero(t, e.count("subsync_erasure_request"), "a dry run changes nothing")
			resp, got = e.call("POST", "/api/v1/forget", e.token, json, []byte(`{"emails": ["kari@example.no"]}`))
			require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", got)
			require.Equal(t, 1, e.count("subsync_erasure_request"))

			require.NoError(t, e.rt.State().Suppress(ctx, []state.Suppression{{ListID: e.list, Email: "ola@example.no",
				Status: sink.StatusUnsubscribed, ChangedAt: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}}))
			resp, got = e.call("GET", "/api/v1/suppression?email=OLA@example.no", e.token, nil, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
			require.Contains(t, string(got), `"suppressed":true`)
			require.Contains(t, string(got), `"status":"unsubscribed"`)
			resp, got = e.call("GET", "/api/v1/suppression?email=lise@example.no", e.token, nil, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Contains(t, string(got), `"suppressed":false`)
			resp, got = e.call("GET", "/api/v1/suppression", e.token, nil, nil)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Equal(t, "email", decodeJSON[problemAnswer](t, got).Field)
			require.NotContains(t, e.log.String(), "OLA@example.no", "the query is not logged")
		})
	}
}

// TestAPIDryRunSourceAndCancel: an upload with dry_run answers the plan of import
// --dry-run --json and keeps nothing (no job, no staged file); JSON naming a source the
// configuration lacks is refused naming the field; DELETE cancels a queued job, and a second
// DELETE finds it ended (409).
func TestAPIDryRunSourceAndCancel(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, "sqlite", web.Options{})
	ctx := context.Background()
	h, body := form(t, [][2]string{{"list", fmt.Sprint(e.list)}, {"dry_run", "true"}}, "kontakter.csv", []byte(importCSV))
	resp, got := e.call("POST", "/api/v1/imports", e.token, h, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
	plan := decodeJSON[struct {
		DryRun   bool  `json:"dry_run"`
		Read     int64 `json:"read"`
		Send     int64 `json:"send"`
		Rejected int64 `json:"rejected"`
	}](t, got)
	require.True(t, plan.DryRun)
	require.Equal(t, int64(4), plan.Read)
	require.Equal(t, int64(3), plan.Send)
	require.Equal(t, int64(1), plan.Rejected)
	require.Zero(t, e.count("subsync_staged_file"), "a dry run keeps nothing")
	queued, err := e.rt.Jobs(ctx)
	require.NoError(t, err)
	require.Empty(t, queued)

	json := http.Header{"Content-Type": {"application/json"}}
	resp, got = e.call("POST", "/api/v1/imports", e.token, json, []byte(fmt.Sprintf(`{"source": "crm", "list": %d}`, e.list)))
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s", got)
	p := decodeJSON[problemAnswer](t, got)
	require.Equal(t, "source", p.Field)
	require.Equal(t, `"crm": no [sources.crm] in the worker's configuration`, p.Detail)

	h, body = form(t, [][2]string{{"list", fmt.Sprint(e.list)}}, "kontakter.csv", []byte(importCSV))
	resp, got = e.call("POST", "/api/v1/imports", e.token, h, body)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", got)
	job := resp.Header.Get("Location")
	resp, got = e.call("DELETE", job, e.token, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
	require.Equal(t, "cancelled", decodeJSON[jobAnswer](t, got).Job.State)
	require.Zero(t, e.count("subsync_staged_file"), "the cancelled import's staged file goes")
	resp, got = e.call("DELETE", job, e.token, nil, nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "%s", got)
	resp, got = e.call("GET", "/api/v1/jobs/999999", e.token, nil, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", got)
	require.Equal(t, "job 999999: no such job", decodeJSON[problemAnswer](t, got).Detail)
}

// TestAPIUnknownMethod: a method a path does not take is 405 with Allow, as a problem. (Not
// checked against the OpenAPI document, which has no operation to check it by.)
func TestAPIUnknownMethod(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, "sqlite", web.Options{})
	req, err := http.NewRequest("PUT", e.srv.URL+"/api/v1/runs", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "GET", resp.Header.Get("Allow"))
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
}

// TestAPIImportMapping: the mapping field is a mapping file's TOML, used by the import (here
// its dry run: Fornavn ignored, so the row of line 4 is still the one rejected); a mapping
// that does not parse is refused naming the field, with nothing staged.
func TestAPIImportMapping(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, "sqlite", web.Options{})
	mappingTOML := "ignore = [\"Fornavn\"]\n[columns]\n\"E-post\" = \"email\"\n"
	h, body := form(t, [][2]string{{"list", fmt.Sprint(e.list)}, {"mapping", mappingTOML}, {"dry_run", "1"}}, "kontakter.csv", []byte(importCSV))
	resp, got := e.call("POST", "/api/v1/imports", e.token, h, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
	require.Contains(t, string(got), `"send":3`)
	require.Contains(t, string(got), `"rejected":1`)

	h, body = form(t, [][2]string{{"list", fmt.Sprint(e.list)}, {"mapping", "[columns]\n\"E-post\" = \"no-such-target\"\n"}}, "kontakter.csv", []byte(importCSV))
	resp, got = e.call("POST", "/api/v1/imports", e.token, h, body)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s", got)
	p := decodeJSON[problemAnswer](t, got)
	require.Equal(t, "mapping", p.Field)
	require.Contains(t, p.Detail, "no-such-target")
	require.Zero(t, e.count("subsync_staged_file"), "nothing kept")
}
