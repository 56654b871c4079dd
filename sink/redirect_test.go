package sink_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

// TestRedirectOffHTTPSCarriesNoCredentials: a redirect from the https service to a plain
// http listener, or to another host, is not followed; the error names both URLs, and the
// credentials reach nobody but the service.
func TestRedirectOffHTTPSCarriesNoCredentials(t *testing.T) {
	t.Parallel()

	var leaked, hits atomic.Int32
	catcher := func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[]`))
	}
	plain := httptest.NewServer(http.HandlerFunc(catcher))
	t.Cleanup(plain.Close)
	other := httptest.NewTLSServer(http.HandlerFunc(catcher))
	t.Cleanup(other.Close)

	for _, tc := range []struct{ name, to string }{
		{"https to http", plain.URL},
		{"https to another host", other.URL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tc.to+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			}))
			t.Cleanup(svc.Close)
			// A client that trusts both TLS servers, so only the redirect rule can stop it.
			hc := svc.Client()
			hc.Transport.(*http.Transport).TLSClientConfig.RootCAs.AddCert(other.Certificate())
			c, err := sink.New(sink.Config{BaseURL: svc.URL + "/api", UserID: testUser, APIKey: testKey,
				HTTPClient: hc, RequestsPerSecond: -1, MaxAttempts: 3})
			require.NoError(t, err)

			_, err = c.Lists(context.Background())
			require.Error(t, err)
			require.ErrorIs(t, err, sink.ErrUnsafeRedirect)
			require.True(t, sink.IsPermanent(err), "a redirect no retry can fix: %v", err)
			msg := err.Error()
			require.Contains(t, msg, svc.URL+"/api/")
			require.Contains(t, msg, tc.to+"/api/")
			require.NotContains(t, msg, testKey)
			require.Zero(t, leaked.Load(), "the credentials followed the redirect")
			require.Zero(t, hits.Load(), "the redirect was followed")
		})
	}
}

// TestRedirectSameHostFollowed: a redirect within the service (same scheme and host) is
// still followed, credentials included.
func TestRedirectSameHostFollowed(t *testing.T) {
	t.Parallel()
	var auth atomic.Value
	auth.Store("")
	svc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v2/") {
			http.Redirect(w, r, "/v2"+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[]`))
	}))
	t.Cleanup(svc.Close)
	c, err := sink.New(sink.Config{BaseURL: svc.URL + "/api", UserID: testUser, APIKey: testKey,
		HTTPClient: svc.Client(), RequestsPerSecond: -1})
	require.NoError(t, err)
	_, err = c.Lists(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, auth.Load())
}
