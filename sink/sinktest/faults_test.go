package sinktest_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink/sinktest"
)

// outcome is what a plain client saw of one request.
type outcome struct {
	status      int
	contentType string
	retryAfter  string
	err         bool
}

// send posts a list and reports the outcome, also when the connection broke.
func send(t *testing.T, srv *sinktest.Server, title string) outcome {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+"/subscriberlists", strings.NewReader(`{"title":"`+title+`"}`))
	require.NoError(t, err)
	req.SetBasicAuth(srv.User, srv.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		return outcome{err: true}
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		return outcome{status: resp.StatusCode, err: true}
	}
	return outcome{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), retryAfter: resp.Header.Get("Retry-After")}
}

func faultSequence(t *testing.T, f sinktest.Faults, n int) ([]outcome, []string, *sinktest.Server) {
	srv := sinktest.NewServer(t, sinktest.WithFaults(f))
	var outs []outcome
	for i := range n {
		outs = append(outs, send(t, srv, "L"+strconv.Itoa(i)))
	}
	var faults []string
	for _, r := range srv.Requests() {
		faults = append(faults, r.Fault)
	}
	return outs, faults, srv
}

func TestFaultsAreReproducibleFromSeed(t *testing.T) {
	t.Parallel()
	f := sinktest.Faults{Seed: 42, ErrorRate: 0.3, TooManyRate: 0.2, DropRate: 0.1, RetryAfter: 2500 * time.Millisecond}
	outs1, faults1, srv := faultSequence(t, f, 80)
	outs2, faults2, _ := faultSequence(t, f, 80)
	require.Equal(t, faults1, faults2, "same seed, same faults")
	require.Equal(t, outs1, outs2, "same seed, same answers")
	f.Seed = 43
	_, faults3, _ := faultSequence(t, f, 80)
	require.NotEqual(t, faults1, faults3, "another seed, other faults")

	kinds := map[string]int{}
	htmlBodies, jsonBodies := 0, 0
	for i, o := range outs1 {
		kinds[faults1[i]]++
		switch faults1[i] {
		case "500", "502", "503":
			require.Equal(t, faults1[i], strconv.Itoa(o.status))
			if strings.HasPrefix(o.contentType, "text/html") {
				htmlBodies++
			} else {
				require.True(t, strings.HasPrefix(o.contentType, "application/json"), o.contentType)
				jsonBodies++
			}
		case "429":
			require.Equal(t, outcome{status: 429, contentType: "application/json; charset=utf-8", retryAfter: "3"}, o)
		case "drop":
			require.True(t, o.err, "a dropped connection is an error for the client")
		case "":
			require.Equal(t, http.StatusOK, o.status)
		default:
			t.Fatalf("unexpected fault %q", faults1[i])
		}
	}
	for _, k := range []string{"", "429", "drop"} {
		require.Positive(t, kinds[k], "fault %q never drawn in %v", k, kinds)
	}
	require.Positive(t, kinds["500"]+kinds["502"]+kinds["503"])
	require.Positive(t, htmlBodies)
	require.Positive(t, jsonBodies)

	// Faulted requests applied nothing, except drops (applied, then cut off).
	lists := decode[[]listOut](t, response{body: mustGet(t, srv, "/subscriberlists")})
	var want []string
	for i, fault := range faults1 {
		if fault == "" || fault == "drop" {
			want = append(want, "L"+strconv.Itoa(i))
		}
	}
	var got []string
	for _, l := range lists {
		got = append(got, l.Title)
	}
	require.Equal(t, want, got)
}

func mustGet(t *testing.T, srv *sinktest.Server, path string) string {
	t.Helper()
	srv.SetFaults(sinktest.Faults{})
	req, err := http.NewRequest("GET", srv.URL+path, nil)
	require.NoError(t, err)
	req.SetBasicAuth(srv.User, srv.Key)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return string(b)
}

func TestDroppedConnectionAfterTheEffect(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.createList("L")
	b.srv.SetFaults(sinktest.Faults{DropRate: 1})
	req, err := http.NewRequest("POST", b.srv.URL+"/subscribers/bulkinsert?subscriber_list_id="+itoa(l.ID),
		strings.NewReader(`[{"email":"dropped@example.com"}]`))
	require.NoError(t, err)
	req.SetBasicAuth(b.srv.User, b.srv.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.srv.Client().Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	require.Error(t, err, "the client sees a broken response")
	require.True(t, errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "EOF"), "got %v", err)

	_, ok := b.srv.SubscriberByEmail("dropped@example.com")
	require.True(t, ok, "the effect was applied before the drop")
	reqs := b.srv.Requests()
	last := reqs[len(reqs)-1]
	require.Equal(t, sinktest.Request{Method: "POST", Path: "/api/public/v2/subscribers/bulkinsert",
		Query: last.Query, Rows: 1, Status: http.StatusOK, Fault: "drop"}, last)
}

func TestMaxRPSAnswers429WithRetryAfter(t *testing.T) {
	t.Parallel()
	// One token every 100 seconds: the first request passes, the next ones cannot.
	b := setup(t, sinktest.WithFaults(sinktest.Faults{MaxRPS: 0.01}))
	r := b.v2("GET", "/subscriberlists", "")
	require.Equal(t, http.StatusOK, r.status)
	for range 2 {
		r = b.v2("GET", "/subscriberlists", "")
		require.Equal(t, http.StatusTooManyRequests, r.status)
		require.JSONEq(t, `{"status":"429 Too many requests"}`, r.body)
		secs, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err)
		require.True(t, secs >= 90 && secs <= 100, "Retry-After %d, want about 100", secs)
	}
	reqs := b.srv.Requests()
	require.Equal(t, []string{"", "max-rps", "max-rps"}, []string{reqs[0].Fault, reqs[1].Fault, reqs[2].Fault})
	b.srv.SetFaults(sinktest.Faults{})
	require.Equal(t, http.StatusOK, b.v2("GET", "/subscriberlists", "").status, "SetFaults lifts the cap")
}

func TestLatencyRespectsRequestContext(t *testing.T) {
	t.Parallel()
	b := setup(t, sinktest.WithFaults(sinktest.Faults{Latency: time.Hour}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", b.srv.URL+"/subscriberlists", strings.NewReader(`{"title":"late"}`))
	require.NoError(t, err)
	req.SetBasicAuth(b.srv.User, b.srv.Key)
	req.Header.Set("Content-Type", "application/json")
	_, err = b.srv.Client().Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The handler notices the closed connection on its own time; wait for its record.
	require.Eventually(t, func() bool {
		reqs := b.srv.Requests()
		return len(reqs) == 1 && reqs[0].Fault == "canceled"
	}, 10*time.Second, 5*time.Millisecond)
	b.srv.SetFaults(sinktest.Faults{})
	require.Equal(t, "[]", b.ok("GET", "/subscriberlists", "").body, "a canceled request applies nothing")
}

func TestServeEndsLatencyWaitsOnShutdown(t *testing.T) {
	t.Parallel()
	e := sinktest.New(sinktest.WithFaults(sinktest.Faults{Latency: time.Hour}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Serve(ctx, ln) }()

	reqErr := make(chan error, 1)
	go func() {
		req, err := http.NewRequest("GET", "http://"+ln.Addr().String()+sinktest.V2Prefix+"/subscriberlists", nil)
		if err == nil {
			var resp *http.Response
			if resp, err = http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		reqErr <- err
	}()
	require.Eventually(t, func() bool { return len(e.Requests()) == 0 && e.InFlight() == 1 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done, "Serve returns without waiting out the latency")
	<-reqErr
	require.Equal(t, "canceled", e.Requests()[0].Fault)
}
