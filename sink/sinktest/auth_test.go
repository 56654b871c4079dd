package sinktest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink/sinktest"
)

func TestBasicAuthOnEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, sinktest.WithCredentials("acct-7", "s3cret"))
	require.Equal(t, "acct-7", b.srv.User)
	require.Equal(t, "s3cret", b.srv.Key)
	routes := []struct{ method, url string }{
		{"GET", b.srv.URL + "/subscriberlists"},
		{"POST", b.srv.URL + "/subscribers/bulkinsert?subscriber_list_id=1"},
		{"GET", b.srv.URL + "/subscriberstatus"},
		{"GET", b.srv.URL + "/custom_fields/"},
		{"GET", b.srv.URL + "/no/such/route"},
		{"GET", b.srv.LegacyURL + "/subscribers/1"},
		{"DELETE", b.srv.LegacyURL + "/subscriberlists/1"},
	}
	for _, rt := range routes {
		for _, cred := range []struct{ user, key string }{{"", ""}, {"acct-7", "wrong"}, {"other", "s3cret"}} {
			r := b.request(rt.method, rt.url, cred.user, cred.key, "")
			require.Equal(t, http.StatusUnauthorized, r.status, "%s %s as %q", rt.method, rt.url, cred.user)
			require.Equal(t, `Basic realm="subscribers"`, r.header.Get("WWW-Authenticate"))
			require.JSONEq(t, `{"status":"401 Unauthorized"}`, r.body)
			require.NotContains(t, r.body, "s3cret")
		}
	}
	r := b.request("GET", b.srv.URL+"/subscriberlists", "acct-7", "s3cret", "")
	require.Equal(t, http.StatusOK, r.status)
	r = b.request("GET", b.srv.LegacyURL+"/subscribers/1", "acct-7", "s3cret", "")
	require.Equal(t, http.StatusNotFound, r.status, "v3 with the right key gets past auth")
	for _, req := range b.srv.Requests()[:len(routes)*3] {
		require.Equal(t, http.StatusUnauthorized, req.Status)
	}
}

func TestPlainText401(t *testing.T) {
	t.Parallel()
	b := setup(t, sinktest.WithPlainText401(true))
	for _, url := range []string{b.srv.URL + "/subscriberlists", b.srv.LegacyURL + "/subscribers/1"} {
		r := b.request("GET", url, b.srv.User, "wrong", "")
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Equal(t, `Basic realm="subscribers"`, r.header.Get("WWW-Authenticate"))
		require.Equal(t, "text/plain; charset=utf-8", r.header.Get("Content-Type"))
		require.Equal(t, "401 Unauthorized\n", r.body)
	}
}
