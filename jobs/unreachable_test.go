package jobs_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// TestWorkerRetriesUnreachableService: while the service cannot be reached, the worker keeps
// retrying with backoff, logs api.base_url once at WARN, and /healthz answers 503 naming it;
// once the service answers, the run completes and /healthz is ok again.
func TestWorkerRetriesUnreachableService(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite")
	// In front of the emulator: while down, every connection is closed before any answer.
	var down atomic.Bool
	down.Store(true)
	var hungUp atomic.Int64
	target, err := url.Parse(b.emu.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			hungUp.Add(1)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	b.cfg.Sink.BaseURL = front.URL + target.Path
	b.cfg.Sink.HTTPClient = nil
	rt := b.open(t)
	health := httptest.NewServer(rt.Handler())
	t.Cleanup(health.Close)
	ctx, cancel := context.WithCancel(context.Background())
	worked := make(chan error, 1)
	go func() { worked <- rt.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-worked)
	})
	jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: contacts(t, t.TempDir(), 10, nil), ListID: b.listID, Shared: true})
	require.NoError(t, err)

	waitFor(t, time.Minute, "three attempts that got no answer", func() bool { return hungUp.Load() >= 3 })
	code, body := healthz(t, health.URL)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "subscriber service unreachable at "+b.cfg.Sink.BaseURL)
	require.Equal(t, 1, strings.Count(b.logs.String(), "subscriber service unreachable"), b.logs.String())
	require.Contains(t, b.logs.String(), "level=WARN msg=\"subscriber service unreachable: retrying with backoff\" base_url="+b.cfg.Sink.BaseURL)
	require.NotEqual(t, state.RunFailed, runOf(t, rt.State(), jobID).State, "a network failure does not fail the run")

	down.Store(false)
	waitFor(t, time.Minute, "the run to complete", func() bool { return runOf(t, rt.State(), jobID).State == state.RunCompleted })
	require.Len(t, b.emu.ListSubscribers(b.listID), 10)
	code, body = healthz(t, health.URL)
	require.Equal(t, http.StatusOK, code, body)
}

func healthz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}
