package sink_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testlog"
	"github.com/subsync/subsync/sink"
)

const (
	testUser = "user-1"
	testKey  = "s3cr3t-API-key-Zq9"
)

// wire is an httptest server whose handler a test sets, with the client's requests recorded.
type wire struct {
	srv      *httptest.Server
	mu       sync.Mutex
	handler  func(w http.ResponseWriter, r *http.Request, n int)
	requests []recorded
}

type recorded struct {
	method, path, query string
	header              http.Header
	body                []byte
}

func newWire(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int)) *wire {
	t.Helper()
	wr := &wire{handler: h}
	wr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		wr.mu.Lock()
		wr.requests = append(wr.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
		n := len(wr.requests)
		wr.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		wr.handler(w, r, n)
	}))
	t.Cleanup(wr.srv.Close)
	return wr
}

func (wr *wire) recorded() []recorded {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return append([]recorded(nil), wr.requests...)
}

// client returns a client of the wire server with fast retries and no rate limit.
func (wr *wire) client(t *testing.T, mutate ...func(*sink.Config)) *sink.Client {
	t.Helper()
	cfg := sink.Config{
		BaseURL:           wr.srv.URL + "/api/public/v2",
		LegacyBaseURL:     wr.srv.URL + "/api/v3",
		UserID:            testUser,
		APIKey:            testKey,
		RequestsPerSecond: -1,
		MaxAttempts:       4,
		BackoffBase:       time.Millisecond,
		BackoffMax:        5 * time.Millisecond,
		Version:           "1.2.3",
	}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := sink.New(cfg)
	require.NoError(t, err)
	return c
}

func writeJSON(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

func ok(w http.ResponseWriter) { writeJSON(w, http.StatusOK, `{"status":"200 Success"}`) }

// hangUp closes the connection without answering.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	_ = conn.Close()
}

// cutBody answers 200 with a body shorter than its Content-Length, then closes.
func cutBody(w http.ResponseWriter) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"status\":\"200")
	_ = rw.Flush()
	_ = conn.Close()
}

func TestRequestHeadersAndBody(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) { ok(w) })
	c := wr.client(t)
	ctx := t.Context()

	_, err := c.InsertBatch(ctx, sink.BulkOptions{ListID: 7, Status: sink.StatusUnsubscribed, Tag: "merge"},
		[]sink.Subscriber{{Email: "a@example.com", Firstname: "Å"}, {Email: "b@example.com", Fields: []sink.Field{{"EXTRA3", "x"}}}})
	require.NoError(t, err)
	require.NoError(t, c.LegacyDeleteSubscriber(ctx, 5))

	reqs := wr.recorded()
	require.Len(t, reqs, 2)
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte(testUser+":"+testKey))
	for _, r := range reqs {
		require.Equal(t, wantAuth, r.header.Get("Authorization"))
		require.Equal(t, "subsync/1.2.3", r.header.Get("User-Agent"))
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.Equal(t, "application/json", r.header.Get("Accept"))
	}
	require.Equal(t, "POST", reqs[0].method)
	require.Equal(t, "/api/public/v2/subscribers/bulkinsert", reqs[0].path)
	require.Equal(t, "status=unsubscribed&subscriber_list_id=7&tag=merge", reqs[0].query)
	require.Equal(t, `[{"email":"a@example.com","firstname":"Å"},{"email":"b@example.com","EXTRA3":"x"}]`, string(reqs[0].body))
	require.Equal(t, "DELETE", reqs[1].method)
	require.Equal(t, "/api/v3/subscribers/5", reqs[1].path)
}

func TestRetryClassification(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code      int
		retried   bool
		permanent bool
	}{
		{400, false, true}, {401, false, true}, {403, false, true}, {404, false, true}, {422, false, true},
		{408, true, false}, {429, true, false}, {500, true, false}, {502, true, false}, {503, true, false}, {504, true, false},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			t.Parallel()
			// Fails twice with the code, then succeeds.
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n <= 2 {
					writeJSON(w, tc.code, fmt.Sprintf(`{"status":"%d %s"}`, tc.code, http.StatusText(tc.code)))
					return
				}
				ok(w)
			})
			var attempts atomic.Int32
			c := wr.client(t, func(cfg *sink.Config) {
				cfg.Observer = func(ri sink.ResponseInfo) {
					attempts.Add(1)
					require.Equal(t, "/subscriberlists/{id}", ri.Route)
					require.Equal(t, "DELETE", ri.Method)
				}
			})
			err := c.DeleteList(t.Context(), 3)
			if tc.retried {
				require.NoError(t, err)
				require.Equal(t, int32(3), attempts.Load(), "attempts")
				return
			}
			require.Error(t, err)
			require.Equal(t, int32(1), attempts.Load(), "a %d must not be retried", tc.code)
			var apiErr *sink.APIError
			require.ErrorAs(t, err, &apiErr)
			require.Equal(t, tc.code, apiErr.StatusCode)
			require.Equal(t, "/subscriberlists/3", apiErr.Path)
			require.Equal(t, tc.permanent, sink.IsPermanent(err))
			require.False(t, apiErr.Temporary())
		})
	}
}

func TestRetriesExhaustedAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		writeJSON(w, http.StatusServiceUnavailable, `{"status":"503 Service unavailable","message":"maintenance"}`)
	})
	c := wr.client(t, func(cfg *sink.Config) { cfg.MaxAttempts = 3 })
	_, err := c.Lists(t.Context())
	require.ErrorContains(t, err, "giving up after 3 attempts")
	require.ErrorContains(t, err, "GET /subscriberlists: 503 Service unavailable: maintenance")
	var apiErr *sink.APIError
	require.ErrorAs(t, err, &apiErr)
	require.True(t, apiErr.Temporary())
	require.False(t, sink.IsPermanent(err))
	require.Len(t, wr.recorded(), 3)
}

func TestRetryAfterSecondsIsHonoured(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusTooManyRequests, `{"status":"429 Too many requests"}`)
			return
		}
		ok(w)
	})
	c := wr.client(t)
	start := time.Now()
	require.NoError(t, c.Unsubscribe(t.Context(), 9))
	require.GreaterOrEqual(t, time.Since(start), time.Second, "the retry came before Retry-After")
	require.Len(t, wr.recorded(), 2)
}

func TestRetryAfterHTTPDateIsHonoured(t *testing.T) {
	t.Parallel()
	var untilNano atomic.Int64
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			until := time.Now().Add(2 * time.Second).Truncate(time.Second)
			untilNano.Store(until.UnixNano())
			w.Header().Set("Retry-After", until.UTC().Format(http.TimeFormat))
			writeJSON(w, http.StatusServiceUnavailable, `{"status":"503 Service unavailable"}`)
			return
		}
		ok(w)
	})
	c := wr.client(t)
	require.NoError(t, c.DeleteSubscriber(t.Context(), 9))
	require.False(t, time.Now().Before(time.Unix(0, untilNano.Load())), "the retry came before the Retry-After date")
	require.Len(t, wr.recorded(), 2)
}

func TestRetryAfterOverCapIsReturned(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Retry-After", "120")
		writeJSON(w, http.StatusTooManyRequests, `{"status":"429 Too many requests"}`)
	})
	c := wr.client(t, func(cfg *sink.Config) { cfg.RetryAfterCap = 60 * time.Second })
	start := time.Now()
	_, err := c.Lists(t.Context())
	require.Less(t, time.Since(start), 5*time.Second, "a Retry-After over the cap must not be waited for")
	var apiErr *sink.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 429, apiErr.StatusCode)
	require.Equal(t, 120*time.Second, apiErr.RetryAfter)
	require.False(t, sink.IsPermanent(err), "a 429 lets a job snooze, not fail")
	require.Len(t, wr.recorded(), 1)
}

func TestRetryBudgetIsNotExceeded(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Retry-After", "2")
		writeJSON(w, http.StatusServiceUnavailable, `{"status":"503 Service unavailable"}`)
	})
	c := wr.client(t, func(cfg *sink.Config) { cfg.MaxRetryTime = 500 * time.Millisecond; cfg.MaxAttempts = 10 })
	start := time.Now()
	err := c.DeleteList(t.Context(), 1)
	require.Less(t, time.Since(start), 2*time.Second)
	require.ErrorContains(t, err, "retry budget 500ms")
	var apiErr *sink.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 2*time.Second, apiErr.RetryAfter, "the caller learns how long to wait")
	require.Len(t, wr.recorded(), 1)
}

func TestContextCancelStopsBackoff(t *testing.T) {
	t.Parallel()
	answered := make(chan struct{}, 1)
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Retry-After", "30")
		writeJSON(w, http.StatusServiceUnavailable, `{"status":"503 Service unavailable"}`)
	})
	c := wr.client(t, func(cfg *sink.Config) {
		cfg.Observer = func(sink.ResponseInfo) { answered <- struct{}{} }
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-answered
		cancel()
	}()
	start := time.Now()
	_, err := c.CustomFields(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "last failure: GET /custom_fields: 503")
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestNetworkFailuresAreRetriedWithTheSameBody(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 1:
			hangUp(w) // connection closed before any response
		case 2:
			cutBody(w) // unexpected EOF mid-body
		case 3:
			writeJSON(w, http.StatusBadGateway, "<html><body><h1>502 Bad Gateway</h1></body></html>")
		default:
			ok(w)
		}
	})
	var errs []error
	var mu sync.Mutex
	c := wr.client(t, func(cfg *sink.Config) {
		cfg.MaxAttempts = 5
		cfg.Observer = func(ri sink.ResponseInfo) {
			mu.Lock()
			errs = append(errs, ri.Err)
			mu.Unlock()
		}
	})
	rows := []sink.Subscriber{{Email: "a@example.com"}, {Email: "b@example.com", Lastname: "Ø"}}
	res, err := c.InsertBatch(t.Context(), sink.BulkOptions{ListID: 1}, rows)
	require.NoError(t, err)
	require.Equal(t, sink.BatchResult{Sent: 2, Requests: 4, Retries: 3}, res)
	reqs := wr.recorded()
	require.Len(t, reqs, 4)
	for _, r := range reqs {
		require.Equal(t, string(reqs[0].body), string(r.body), "every attempt replays the same body")
	}
	require.Equal(t, `[{"email":"a@example.com"},{"email":"b@example.com","lastname":"Ø"}]`, string(reqs[0].body))
	require.Len(t, errs, 4)
	require.Error(t, errs[0])
	require.ErrorIs(t, errs[1], io.ErrUnexpectedEOF)
	require.NoError(t, errs[2])
	require.NoError(t, errs[3])
}

func TestNetworkFailureExhaustedIsWrapped(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) { hangUp(w) })
	c := wr.client(t, func(cfg *sink.Config) { cfg.MaxAttempts = 2 })
	_, err := c.InsertBatch(t.Context(), sink.BulkOptions{ListID: 1}, []sink.Subscriber{{Email: "a@example.com"}})
	require.ErrorContains(t, err, "giving up after 2 attempts: POST /subscribers/bulkinsert: ")
	require.False(t, sink.IsPermanent(err))
	var apiErr *sink.APIError
	require.False(t, errors.As(err, &apiErr))
}

// TestContextEndKeepsTheNetworkCause: a call whose context ends while it waits to retry a
// refused connection still says (errors.Is) that the connection was refused, and names the
// call once.
func TestContextEndKeepsTheNetworkCause(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	refused := make(chan struct{}, 1)
	c, err := sink.New(sink.Config{BaseURL: "http://" + addr + "/v2", UserID: testUser, APIKey: testKey,
		RequestsPerSecond: -1, BackoffBase: time.Hour, BackoffMax: time.Hour, MaxRetryTime: 2 * time.Hour,
		Observer: func(sink.ResponseInfo) { refused <- struct{}{} }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-refused // the first attempt failed: the call waits an hour to retry
		cancel()
	}()
	_, err = c.CustomFields(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.Equal(t, 1, strings.Count(err.Error(), "GET /custom_fields"), err.Error())
}

func TestPerAttemptTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			select { // hold the first attempt past the client's timeout
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		writeJSON(w, http.StatusOK, `[]`)
	})
	c := wr.client(t, func(cfg *sink.Config) { cfg.Timeout = 200 * time.Millisecond })
	lists, err := c.Lists(t.Context())
	require.NoError(t, err)
	require.Empty(t, lists)
	require.Len(t, wr.recorded(), 2)
}

func TestNonJSONBodiesGiveAClearError(t *testing.T) {
	t.Parallel()
	html := "<!DOCTYPE html>\n<html>\n  <head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		code := http.StatusBadGateway
		if r.URL.Path == "/api/public/v2/subscriberlists" {
			code = http.StatusOK // a captive portal or a wrong base URL
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, html)
	})
	c := wr.client(t, func(cfg *sink.Config) { cfg.MaxAttempts = 2 })

	_, err := c.CustomFields(t.Context())
	require.ErrorContains(t, err, "GET /custom_fields: unexpected text/html response (HTTP 502): <!DOCTYPE html> <html> <head><title>502 Bad Gateway</title>")
	var apiErr *sink.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 502, apiErr.StatusCode)
	require.Equal(t, html, apiErr.Body)

	_, err = c.Lists(t.Context())
	require.ErrorContains(t, err, "GET /subscriberlists: unexpected text/html response (HTTP 200): <!DOCTYPE html>")
}

func TestPlainText401(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("WWW-Authenticate", `Basic realm="subscribers"`)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, "Unauthorized\n")
	})
	c := wr.client(t)
	_, err := c.Subscriber(t.Context(), 4)
	require.EqualError(t, err, "GET /subscribers/4: unexpected text/plain response (HTTP 401): Unauthorized")
	require.True(t, sink.IsPermanent(err))
	require.Len(t, wr.recorded(), 1)
}

func TestResponseBodyIsCapped(t *testing.T) {
	t.Parallel()
	big := make([]byte, 0, sink.MaxResponseBytes+64)
	big = append(big, '[')
	for len(big) < sink.MaxResponseBytes+16 {
		big = append(big, `{"id":1,"title":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},`...)
	}
	big = append(big, `{"id":2}]`...)
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(big)
	})
	c := wr.client(t)
	_, err := c.Lists(t.Context())
	require.ErrorContains(t, err, "response body exceeds 8 MiB")
	require.True(t, sink.IsPermanent(err))
	require.Len(t, wr.recorded(), 1, "an oversized body is not retried")
}

func TestAckWithFailureStatusInA200(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		writeJSON(w, http.StatusOK, `{"status":"404 Not found"}`)
	})
	c := wr.client(t)
	err := c.DeleteCustomField(t.Context(), 12)
	var apiErr *sink.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 404, apiErr.StatusCode)
	require.EqualError(t, err, "DELETE /custom_fields/12: 404 Not found")
}

func TestRateLimitAppliesToRetries(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n <= 4 {
			writeJSON(w, http.StatusInternalServerError, `{"status":"500 Internal server error"}`)
			return
		}
		ok(w)
	})
	c := wr.client(t, func(cfg *sink.Config) { cfg.RequestsPerSecond = 10; cfg.MaxAttempts = 5 })
	start := time.Now()
	require.NoError(t, c.DeleteList(t.Context(), 1))
	// Five attempts at 10/s with a burst of 1 need at least four intervals of 100ms.
	require.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond)
	require.Len(t, wr.recorded(), 5)
}

func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int32
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		arrived <- struct{}{}
		<-release
		inFlight.Add(-1)
		ok(w)
	})
	c := wr.client(t, func(cfg *sink.Config) { cfg.MaxInFlight = 2 })
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Go(func() { errs <- c.DeleteSubscriber(t.Context(), int64(i+1)) })
	}
	<-arrived
	<-arrived
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int32(2), peak.Load(), "peak concurrent requests")
	require.Len(t, wr.recorded(), 6)
}

func TestInsertBatchRefusesOver1000Rows(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) { ok(w) })
	c := wr.client(t)
	rows := make([]sink.Subscriber, sink.MaxBatchRows+1)
	for i := range rows {
		rows[i].Email = fmt.Sprintf("p%d@example.com", i)
	}
	_, err := c.InsertBatch(t.Context(), sink.BulkOptions{ListID: 1}, rows)
	require.ErrorIs(t, err, sink.ErrInvalidInput)
	require.True(t, sink.IsPermanent(err))
	_, err = c.InsertBatch(t.Context(), sink.BulkOptions{ListID: 1, Status: "bogus"}, rows[:3])
	require.ErrorIs(t, err, sink.ErrInvalidInput)
	require.Empty(t, wr.recorded(), "nothing is sent")

	res, err := c.BulkInsert(t.Context(), sink.BulkOptions{ListID: 1}, rows)
	require.NoError(t, err)
	require.Equal(t, sink.BatchResult{Sent: 1001, Requests: 2}, res)
}

// refuser answers bulkinserts like the service: 422 for the whole request if any row's
// e-mail is in bad, otherwise it records the rows as delivered. hint says how the 422
// message names the row: "" = no message, "zero" = 0-based "row N: …", "one" = 1-based.
// The reason names the e-mail unless sameReason.
type refuser struct {
	mu         sync.Mutex
	bad        map[string]bool
	hint       string
	sameReason bool
	delivered  map[string]int
}

func (rf *refuser) serve(w http.ResponseWriter, r *http.Request, _ int) {
	var rows []map[string]any
	if err := json.NewDecoder(r.Body).Decode(&rows); err != nil {
		writeJSON(w, 422, `{"status":"422 Unprocessable entity","message":"body is not a JSON array"}`)
		return
	}
	for i, row := range rows {
		email, _ := row["email"].(string)
		if !rf.bad[email] {
			continue
		}
		reason := "unknown field EXTRA99 for " + email
		if rf.sameReason {
			reason = "unknown field EXTRA99"
		}
		switch rf.hint {
		case "zero":
			writeJSON(w, 422, fmt.Sprintf(`{"status":"422 Unprocessable entity","message":"row %d: %s"}`, i, reason))
		case "one":
			writeJSON(w, 422, fmt.Sprintf(`{"status":"422 Unprocessable entity","message":"row %d: %s"}`, i+1, reason))
		default:
			writeJSON(w, 422, `{"status":"422 Unprocessable entity"}`)
		}
		return
	}
	rf.mu.Lock()
	for _, row := range rows {
		rf.delivered[row["email"].(string)]++
	}
	rf.mu.Unlock()
	ok(w)
}

func TestInsertBatchIsolatesRefusedRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		hint       string
		sameReason bool
	}{{"", false}, {"zero", false}, {"one", false}, {"zero", true}, {"", true}} {
		hint := tc.hint
		t.Run(fmt.Sprintf("hint=%s,same=%t", tc.hint, tc.sameReason), func(t *testing.T) {
			t.Parallel()
			// More rows than maxSameRefusals, first and last included.
			badIdx := []int{0, 1, 2, 57, 58, 500, 501, 502, 503, 998, 999}
			rf := &refuser{bad: map[string]bool{}, hint: hint, sameReason: tc.sameReason, delivered: map[string]int{}}
			rows := make([]sink.Subscriber, 1000)
			for i := range rows {
				rows[i].Email = fmt.Sprintf("p%d@example.com", i)
			}
			for _, i := range badIdx {
				rf.bad[rows[i].Email] = true
			}
			rows[300].Email = "  " // no e-mail: rejected without being sent
			wr := newWire(t, rf.serve)
			c := wr.client(t)
			res, err := c.InsertBatch(t.Context(), sink.BulkOptions{ListID: 1}, rows)
			require.NoError(t, err)
			require.Equal(t, 1000-len(badIdx)-1, res.Sent)
			require.Equal(t, len(wr.recorded()), res.Requests)
			var want []sink.RowReject
			for _, i := range []int{0, 1, 2, 57, 58, 300, 500, 501, 502, 503, 998, 999} {
				reason := "refused by the service (422)"
				switch {
				case i == 300:
					want = append(want, sink.RowReject{Index: 300, Reason: "no e-mail address"})
					continue
				case hint != "" && tc.sameReason:
					reason = "unknown field EXTRA99"
				case hint != "":
					reason = "unknown field EXTRA99 for " + rows[i].Email
				}
				want = append(want, sink.RowReject{Index: i, Email: rows[i].Email, Reason: reason})
			}
			require.Equal(t, want, res.Rejects)
			for i, r := range rows {
				if rf.bad[r.Email] || i == 300 {
					require.Zero(t, rf.delivered[r.Email], "row %d was refused", i)
					continue
				}
				require.Equal(t, 1, rf.delivered[r.Email], "row %d delivered once", i)
			}
			if hint == "zero" && !tc.sameReason {
				// A named row costs one request alone and one for the rest.
				require.Equal(t, 1+2*len(badIdx), res.Requests)
			}
			t.Logf("hint %q: %d requests", hint, res.Requests)
		})
	}
}

func TestInsertBatchWholeRequestRefused(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{"unknown list 42", "row 0: unknown list 42", ""} {
		t.Run(msg, func(t *testing.T) {
			t.Parallel()
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				writeJSON(w, 422, fmt.Sprintf(`{"status":"422 Unprocessable entity","message":%q}`, msg))
			})
			c := wr.client(t)
			rows := make([]sink.Subscriber, 1000)
			for i := range rows {
				rows[i].Email = fmt.Sprintf("p%d@example.com", i)
			}
			res, err := c.InsertBatch(t.Context(), sink.BulkOptions{ListID: 42}, rows)
			require.ErrorContains(t, err, "so it refuses the request as a whole: POST /subscribers/bulkinsert: 422 Unprocessable entity")
			require.ErrorContains(t, err, msg)
			require.True(t, sink.IsPermanent(err))
			require.Zero(t, res.Sent)
			require.Empty(t, res.Rejects)
			require.Less(t, res.Requests, 40, "giving up early, not after splitting 1000 rows")
			t.Logf("%q: gave up after %d requests", msg, res.Requests)
		})
	}
}

func TestStatusChangesTolerantParse(t *testing.T) {
	t.Parallel()
	body := `{"total": 5, "changes": [
		{"id": 1, "email": "a@example.com", "status": "unsubscribed", "subscriber_list_id": 3, "date_updated": "2024-03-01T10:00:00.000Z", "extra": {"x": 1}},
		{"id": "2", "email": "b@example.com", "email_status": "bounce", "list_id": "3", "updated_at": "2024-03-01 09:00:00"},
		{"id": 1, "email": "A@example.com", "status": "unsubscribed", "subscriber_list_id": 3, "date_updated": "2024-03-01T11:00:00+01:00"},
		{"id": 3, "email": "c@example.com", "phone": null, "status": "Active", "status_mobile": "unsubscribed", "subscriber_list_id": 4, "date_updated": "2024-03-02T08:00:00Z"},
		{"id": 4, "email": "d@example.com", "status": "bounce", "subscriber_list_id": 4, "date_updated": "2024-02-28"}
	]}`
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) { writeJSON(w, 200, body) })
	c := wr.client(t)
	from := time.Date(2024, 2, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600))
	got, err := c.StatusChanges(t.Context(), from, time.Time{})
	require.NoError(t, err)
	require.Equal(t, "from_date=2024-01-31", wr.recorded()[0].query, "the bound's UTC day: right if read as a time or a day")
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	require.Equal(t, []sink.StatusChange{
		{SubscriberID: 4, Email: "d@example.com", Status: "bounce", ListID: 4, DateUpdated: at("2024-02-28T00:00:00Z")},
		{SubscriberID: 2, Email: "b@example.com", Status: "bounce", ListID: 3, DateUpdated: at("2024-03-01T09:00:00Z")},
		{SubscriberID: 1, Email: "a@example.com", Status: "unsubscribed", ListID: 3, DateUpdated: at("2024-03-01T10:00:00Z")},
		{SubscriberID: 3, Email: "c@example.com", Status: "active", StatusMobile: "unsubscribed", ListID: 4, DateUpdated: at("2024-03-02T08:00:00Z")},
	}, got)
}

func TestLegacyWithoutURL(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) { ok(w) })
	c := wr.client(t, func(cfg *sink.Config) { cfg.LegacyBaseURL = "" })
	_, err := c.LegacySubscriber(t.Context(), 1)
	require.ErrorIs(t, err, sink.ErrNoLegacyURL)
	require.ErrorIs(t, c.LegacyDeleteList(t.Context(), 1), sink.ErrNoLegacyURL)
	err = c.LegacyDeleteSubscriber(t.Context(), 1)
	require.ErrorIs(t, err, sink.ErrNoLegacyURL)
	require.ErrorContains(t, err, "api.legacy_base_url is not configured")
	require.True(t, sink.IsPermanent(err))
	require.Empty(t, wr.recorded())
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	good := sink.Config{BaseURL: "https://example.com/api/public/v2", UserID: "u", APIKey: testKey}
	cases := []struct {
		name    string
		mutate  func(*sink.Config)
		wantErr string
	}{
		{"no base url", func(c *sink.Config) { c.BaseURL = "" }, "BaseURL: missing"},
		{"no user", func(c *sink.Config) { c.UserID = "" }, "UserID: missing"},
		{"no key", func(c *sink.Config) { c.APIKey = "" }, "APIKey: missing"},
		{"credentials in url", func(c *sink.Config) { c.BaseURL = "https://u:" + testKey + "@example.com/v2" }, "credentials do not belong in the URL"},
		{"bad scheme", func(c *sink.Config) { c.BaseURL = "ftp://example.com" }, `BaseURL: "ftp://example.com": want an absolute https:// URL`},
		{"bad legacy", func(c *sink.Config) { c.LegacyBaseURL = "example.com/v3" }, `LegacyBaseURL: "example.com/v3": want an absolute https:// URL`},
		{"query", func(c *sink.Config) { c.BaseURL = "https://example.com/v2?x=1" }, "BaseURL: \"https://example.com/v2?x=1\": must not have a query or a fragment"},
		{"plain http", func(c *sink.Config) { c.BaseURL = "http://example.com/v2" }, "plain http is refused for a non-loopback host"},
		{"negative timeout", func(c *sink.Config) { c.Timeout = -time.Second }, `Timeout: "-1s": must be positive`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := good
			tc.mutate(&cfg)
			_, err := sink.New(cfg)
			require.ErrorContains(t, err, tc.wantErr)
			require.ErrorIs(t, err, sink.ErrInvalidConfig)
			require.True(t, sink.IsPermanent(err))
			require.NotContains(t, err.Error(), testKey)
		})
	}
	_, err := sink.New(good)
	require.NoError(t, err)
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	token := base64.StdEncoding.EncodeToString([]byte(testUser + ":" + testKey))
	// A hostile service that echoes the credentials back in every way it can.
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		auth := r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/api/public/v2/subscriberlists": // HTML 5xx, retried until exhausted
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "<html>bad gateway for %s (%s)</html>", auth, testKey)
		case "/api/public/v2/custom_fields": // JSON 401 naming the key
			writeJSON(w, 401, fmt.Sprintf(`{"status":"401 Unauthorized %s","message":"key %s, header %s"}`, testKey, testKey, auth))
		case "/api/public/v2/subscribers/bulkinsert": // 422 naming the key
			writeJSON(w, 422, fmt.Sprintf(`{"status":"422 Unprocessable entity","message":"row 0: %s"}`, testKey))
		case "/api/public/v2/subscriberstatus": // 200 with a body that is not JSON
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "welcome %s", testKey)
		case "/api/public/v2/subscribers/1": // 429 with the key, Retry-After over the cap
			w.Header().Set("Retry-After", "3600")
			writeJSON(w, 429, fmt.Sprintf(`{"status":"429","message":"%s"}`, auth))
		case "/api/public/v2/subscribers/2":
			hangUp(w)
		default:
			writeJSON(w, 404, fmt.Sprintf(`{"status":"404 Not found","message":"%s"}`, token))
		}
	})
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := wr.client(t, func(cfg *sink.Config) { cfg.Logger = logger; cfg.MaxAttempts = 2 })
	ctx := t.Context()

	var errs []error
	_, err := c.Lists(ctx)
	errs = append(errs, err)
	_, err = c.CustomFields(ctx)
	errs = append(errs, err)
	res, err := c.InsertBatch(ctx, sink.BulkOptions{ListID: 1}, []sink.Subscriber{{Email: "a@example.com"}})
	require.NoError(t, err, "a refused row is a reject, not an error")
	_, err = c.StatusChanges(ctx, time.Time{}, time.Time{})
	errs = append(errs, err)
	_, err = c.Subscriber(ctx, 1)
	errs = append(errs, err)
	_, err = c.Subscriber(ctx, 2)
	errs = append(errs, err)
	errs = append(errs, c.DeleteList(ctx, 5))
	cfg := sink.Config{BaseURL: "https://example.com", UserID: testUser, APIKey: testKey}
	_, err = sink.New(sink.Config{BaseURL: "https://" + testUser + ":" + testKey + "@example.com", UserID: testUser, APIKey: testKey})
	errs = append(errs, err)

	require.Len(t, res.Rejects, 1)
	texts := []string{res.Rejects[0].Reason, logs.String(),
		fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%s", cfg), fmt.Sprintf("%q", cfg), cfg.String()}
	logger.Info("config", "cfg", cfg)
	texts = append(texts, logs.String())
	for i, err := range errs {
		require.Error(t, err, "call %d", i)
		texts = append(texts, err.Error())
		var apiErr *sink.APIError
		if errors.As(err, &apiErr) {
			texts = append(texts, apiErr.Body, apiErr.Message, apiErr.Status)
		}
	}
	for _, s := range texts {
		require.NotContains(t, s, testKey)
		require.NotContains(t, s, token)
	}
	require.Contains(t, logs.String(), "retrying", "the retries were logged")
	require.Contains(t, res.Rejects[0].Reason, "xxxxx")
}

// TestUnpaddedTokenNeverLeaks: a service that echoes the Basic token without its '='
// padding does not get it into an error (issue 19, point 8).
func TestUnpaddedTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	token := base64.StdEncoding.EncodeToString([]byte(testUser + ":" + testKey))
	require.True(t, strings.HasSuffix(token, "="), "the test needs a padded token")
	unpadded := strings.TrimRight(token, "=")
	wr := newWire(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeJSON(w, 401, fmt.Sprintf(`{"status":"401 Unauthorized","message":"bad token %s"}`, unpadded))
	})
	c := wr.client(t)
	_, err := c.Lists(t.Context())
	require.Error(t, err)
	var apiErr *sink.APIError
	require.ErrorAs(t, err, &apiErr)
	for _, s := range []string{err.Error(), apiErr.Body, apiErr.Message, apiErr.Status} {
		require.NotContains(t, s, unpadded)
	}
	require.Contains(t, apiErr.Message, "bad token xxxxx")
}

func TestConfigLogValueRedacts(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	logger.Info("start", "api", sink.Config{BaseURL: "https://x", UserID: "u", APIKey: testKey})
	require.NotContains(t, buf.String(), testKey)
	require.Contains(t, buf.String(), `"api_key":"xxxxx"`)
	require.True(t, strings.Contains(buf.String(), `"user_id":"u"`))
}
