package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/config"
)

// freeAddr returns an address on all interfaces with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return fmt.Sprintf("0.0.0.0:%d", port)
}

func (h *harness) listenOn(addr string) {
	h.write(fmt.Sprintf(`
[api]
base_url = %q
user_id = %q
max_attempts = 1
[database]
data_dir = %q
[worker]
metrics_address = %q
`, h.srv.URL, h.srv.User, h.dir, addr))
}

// Bound to a non-loopback address without a password, run and ui refuse to start (exit 2)
// and say what to configure.
func TestPagesOffLoopbackNeedAPassword(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	h.listenOn(freeAddr(t))
	for _, cmd := range []string{"run", "ui"} {
		r := h.run("", cmd)
		require.Equal(t, ExitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, "not a loopback address")
		require.Contains(t, r.stderr, "SUBSYNC_WEB_PASSWORD")
		require.Contains(t, r.stderr, "web.password_file")
	}
}

// With a password, `subsync run` serves the pages beside /metrics: a request without the
// password gets 401, with it 200.
func TestRunServesPagesWithPassword(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	addr := freeAddr(t)
	h.listenOn(addr)
	h.env[config.EnvWebPassword] = "pages-pass"
	var out, errb bytes.Buffer
	a := newApp(strings.NewReader(""), &out, &errb)
	a.getenv = func(k string) string { return h.env[k] }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- a.main(ctx, []string{"--config", h.config, "run"}) }()

	base := "http://127.0.0.1:" + addr[strings.LastIndexByte(addr, ':')+1:]
	get := func(path, password string) int {
		req, err := http.NewRequest("GET", base+path, nil)
		require.NoError(t, err)
		if password != "" {
			req.SetBasicAuth("admin", password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Wait until the worker serves /healthz, checking every 20 ms.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(30 * time.Second)
	for get("/healthz", "") != http.StatusOK {
		select {
		case code := <-done:
			t.Fatalf("run exited with %d: %s", code, errb.String())
		case <-timeout:
			t.Fatalf("the worker did not serve /healthz: %s", errb.String())
		case <-tick.C:
		}
	}
	require.Equal(t, http.StatusUnauthorized, get("/runs", ""))
	require.Equal(t, http.StatusUnauthorized, get("/riverui/", ""))
	require.Equal(t, http.StatusUnauthorized, get("/runs", "wrong"))
	require.Equal(t, http.StatusOK, get("/runs", "pages-pass"))
	require.Equal(t, http.StatusOK, get("/metrics", ""))
	cancel()
	require.Equal(t, ExitOK, <-done, errb.String())
	require.NotContains(t, errb.String(), "pages-pass")
}

// `subsync schedules` prints every sync and the status pull with its next run times, in the
// schedule's time zone; a sync's verify_every and the status pull's reconcile_schedule (by
// default @daily) are listed as schedules of their own.
func TestSchedules(t *testing.T) {
	t.Parallel()
	h := setup(t, `
[[syncs]]
name = "nightly"
list = 7
schedule = "30 2 * * *"
time_zone = "Europe/Oslo"
verify_every = "0 4 * * 0"
[syncs.source]
path = "x.csv"
[[syncs]]
name = "adhoc"
list = 8
[syncs.source]
path = "y.csv"
[status]
schedule = "@every 6h"
`)
	out := decode[[]scheduleJSON](t, h.ok("schedules", "--count", "2", "--json"))
	require.Len(t, out, 5)
	require.Equal(t, "nightly", out[0].Name)
	require.Empty(t, out[0].Also)
	require.Equal(t, "Europe/Oslo", out[0].TimeZone)
	require.Len(t, out[0].Next, 2)
	for _, n := range out[0].Next {
		require.Equal(t, "02:30", n.In(mustZone(t, "Europe/Oslo")).Format("15:04"))
	}
	require.Equal(t, 24*time.Hour, out[0].Next[1].Sub(out[0].Next[0]).Round(time.Hour))
	verify := out[1]
	require.Equal(t, "nightly", verify.Name)
	require.Equal(t, "verify", verify.Also)
	require.Equal(t, "0 4 * * 0", verify.Schedule)
	require.Equal(t, time.Sunday, verify.Next[0].In(mustZone(t, "Europe/Oslo")).Weekday())
	require.Equal(t, "adhoc", out[2].Name)
	require.Empty(t, out[2].Next)
	require.Equal(t, "status_pull", out[3].Kind)
	require.Equal(t, 6*time.Hour, out[3].Next[1].Sub(out[3].Next[0]))
	require.Equal(t, "status_pull", out[4].Kind)
	require.Equal(t, "reconcile", out[4].Also)
	require.Equal(t, "@daily", out[4].Schedule)

	table := h.ok("schedules")
	require.Contains(t, table, "sync (verify)")
	require.Contains(t, table, "status_pull (reconcile)")
	require.Contains(t, table, "on demand")
	require.Contains(t, table, "30 2 * * *")
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}
