package cli

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/config"
)

// closedPort returns a loopback address nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// silentPort returns a loopback address that accepts connections and never answers.
func silentPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// TestServiceFailuresNameBaseURLAndCause: an interactive command that cannot get an answer
// from the service gives up within --service-timeout, naming api.base_url and the cause a
// person acts on.
func TestServiceFailuresNameBaseURLAndCause(t *testing.T) {
	t.Parallel()
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler()) // a certificate nobody trusts
	t.Cleanup(tlsSrv.Close)
	for _, tt := range []struct {
		name, baseURL, timeout, cause string
	}{
		// Retried (with backoff) until the bound: still reported as refused, not as a time out.
		{"refused", "http://" + closedPort(t) + "/api/public/v2", "500ms", "cannot be reached: connection refused"},
		{"dns", "https://nowhere.invalid/api/public/v2", "5s", `the host name "nowhere.invalid" does not resolve (DNS)`},
		{"tls", tlsSrv.URL + "/api/public/v2", "5s", "cannot be reached: TLS failed"},
		{"timeout", "http://" + silentPort(t) + "/api/public/v2", "300ms", "did not answer within 300ms (time out"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, "")
			h.write(fmt.Sprintf("[api]\nbase_url = %q\nuser_id = \"u\"\n[worker]\nmetrics_address = \"off\"\n", tt.baseURL))
			csv := filepath.Join(h.dir, "contacts.csv")
			require.NoError(t, os.WriteFile(csv, []byte("email,Kilde\nada@example.com,web\n"), 0o600))
			m := filepath.Join(h.dir, "m.toml")
			require.NoError(t, os.WriteFile(m, []byte("[columns]\nemail = \"email\"\nKilde = \"custom:Kilde\"\n"), 0o600))
			bound, err := time.ParseDuration(tt.timeout)
			require.NoError(t, err)
			for _, args := range [][]string{
				{"lists", "ls"},
				{"preview", csv, "--mapping", m}, // the custom field is looked up
				{"import", csv, "--list", "1", "--wait"},
			} {
				start := time.Now()
				r := h.run("", append([]string{"--service-timeout", tt.timeout}, args...)...)
				require.Equal(t, ExitFailure, r.code, "%v: %s", args, r.stderr)
				require.Less(t, time.Since(start), bound+5*time.Second, args)
				require.Contains(t, r.stderr, "the subscriber service at api.base_url "+tt.baseURL, args)
				require.Contains(t, r.stderr, tt.cause, args)
			}
		})
	}
}

// TestPreviewSyncCustomFieldsBounded: the custom fields a configured sync's mapping names
// are looked up within --service-timeout.
func TestPreviewSyncCustomFieldsBounded(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	base := "http://" + silentPort(t) + "/api/public/v2"
	h.write(fmt.Sprintf("[api]\nbase_url = %q\nuser_id = \"u\"\n[[syncs]]\nname = \"news\"\nlist = 1\n"+
		"source = { path = \"contacts.csv\" }\n[syncs.mapping.columns]\nemail = \"email\"\nKilde = \"custom:Kilde\"\n", base))
	csv := filepath.Join(h.dir, "contacts.csv")
	require.NoError(t, os.WriteFile(csv, []byte("email,Kilde\nada@example.com,web\n"), 0o600))
	start := time.Now()
	r := h.run("", "--service-timeout", "200ms", "preview", csv, "--sync", "news")
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Contains(t, r.stderr, "api.base_url "+base+" did not answer within 200ms")
}

// TestUnauthorizedNamesBaseURLAndCredentials: a 401 names where the credentials come from.
func TestUnauthorizedNamesBaseURLAndCredentials(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	h.env[config.EnvAPIKey] = "wrong"
	r := h.run("", "lists", "ls")
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, "the subscriber service at api.base_url "+h.srv.URL+" refused the credentials (401): "+credentialHint)
}
