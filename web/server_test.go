package web_test

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/web"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr, password string
		wantErr        string
	}{
		{"127.0.0.1:9464", "", ""},
		{"[::1]:9464", "", ""},
		{"localhost:9464", "", ""},
		{"0.0.0.0:9464", "", "set a password for them (SUBSYNC_WEB_PASSWORD, or web.password_file"},
		{":9464", "", "not a loopback address"},
		{"10.0.0.5:9464", "", "not a loopback address"},
		{"0.0.0.0:9464", "pw", ""},
	} {
		err := web.CheckAddr(tc.addr, tc.password)
		if tc.wantErr == "" {
			require.NoError(t, err, tc.addr)
		} else {
			require.ErrorContains(t, err, tc.wantErr, tc.addr)
		}
	}
}

type client struct {
	t    *testing.T
	base string
	auth string
}

func (c client) do(method, path string, form url.Values, header map[string]string) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	require.NoError(c.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp, string(b)
}

// On loopback without a password the pages work, but e-mail addresses are masked, the
// suppression search matches whole addresses only and the rejects download is refused.
func TestWithoutPasswordAddressesAreMasked(t *testing.T) {
	t.Parallel()
	d := setupDemo(t, "sqlite")
	pages, err := web.New(d.rt, web.Options{})
	require.NoError(t, err)
	srv := httptest.NewServer(pages)
	defer srv.Close()
	c := client{t: t, base: srv.URL}

	resp, body := c.do("GET", "/suppression?q=kari.nord", nil, nil)
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, body, "Nobody on the suppression list matches")
	_, body = c.do("GET", "/suppression?q="+url.QueryEscape(strings.ToUpper(leaverTo)), nil, nil)
	require.Contains(t, body, "k***@example.no")
	require.NotContains(t, body, leaverTo)

	resp, _ = c.do("GET", fmt.Sprintf("/runs/%d/rejects.csv", d.importID), nil, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	_, body = c.do("GET", fmt.Sprintf("/runs/%d", d.importID), nil, nil)
	require.Contains(t, body, "invalid_email")
	require.NotContains(t, body, "Download all rejects")
}

// Without a password, a phone number is masked as an e-mail address is: a reject's value in a
// phone column and the first reject of its code show only its first character and last two,
// on the run page, on SQLite and Postgres.
func TestWithoutPasswordPhonesAreMasked(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			d := setupDemo(t, backend)
			const phone = "+47 912 34 56x"
			path := filepath.Join(t.TempDir(), "phones.csv")
			require.NoError(t, os.WriteFile(path, []byte("E-post;Mobil\nola@example.no;"+phone+"\n"), 0o600))
			id, err := d.rt.EnqueueImport(t.Context(), jobs.ImportArgs{Path: path, ListID: d.listID})
			require.NoError(t, err)
			run, err := d.rt.Wait(t.Context(), id, nil)
			require.NoError(t, err)
			require.Equal(t, int64(1), run.Counts.Rejected)

			pages, err := web.New(d.rt, web.Options{})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			c := client{t: t, base: srv.URL}
			resp, body := c.do("GET", fmt.Sprintf("/runs/%d", run.ID), nil, nil)
			require.Equal(t, 200, resp.StatusCode)
			require.Contains(t, body, "invalid_phone")
			require.False(t, strings.Contains(body, "912"), "the phone number is masked")
			require.Contains(t, body, "&#43;***6x") // html/template writes + as &#43;

			pages, err = web.New(d.rt, web.Options{Password: password})
			require.NoError(t, err)
			authed := httptest.NewServer(pages)
			defer authed.Close()
			_, body = client{t: t, base: authed.URL, auth: "Bearer " + password}.do("GET", fmt.Sprintf("/runs/%d", run.ID), nil, nil)
			require.Contains(t, body, "&#43;47 912 34 56x", "shown to a signed-in user")
		})
	}
}

// Every action is a POST with the CSRF token of the pages; a cross-origin POST is refused
// even with it. A script may authenticate with a Bearer token.
func TestActionsNeedCSRFToken(t *testing.T) {
	t.Parallel()
	d := setupDemo(t, "sqlite")
	pages, err := web.New(d.rt, web.Options{Password: password})
	require.NoError(t, err)
	srv := httptest.NewServer(pages)
	defer srv.Close()
	c := client{t: t, base: srv.URL, auth: "Bearer " + password}

	resp, body := c.do("GET", "/syncs", nil, nil)
	require.Equal(t, 200, resp.StatusCode)
	i := strings.Index(body, `name="csrf" value="`)
	require.Positive(t, i)
	token := body[i+len(`name="csrf" value="`):]
	token = token[:strings.IndexByte(token, '"')]

	resp, _ = c.do("GET", "/syncs/"+syncName+"/run", nil, nil)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "GET does not act")
	resp, _ = c.do("POST", "/syncs/"+syncName+"/run", url.Values{}, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no token")
	resp, _ = c.do("POST", "/syncs/"+syncName+"/run", url.Values{"csrf": {"x" + token[1:]}}, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a wrong token")
	resp, _ = c.do("POST", "/syncs/"+syncName+"/run", url.Values{"csrf": {token}},
		map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "cross-origin")
	jobsBefore, err := d.rt.Jobs(t.Context())
	require.NoError(t, err)
	require.Empty(t, jobsBefore)

	resp, _ = c.do("POST", "/syncs/"+syncName+"/run", url.Values{"csrf": {token}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "queued")
	queued, err := d.rt.Jobs(t.Context())
	require.NoError(t, err)
	require.Len(t, queued, 1)

	c.auth = "Bearer wrong"
	resp, _ = c.do("GET", "/syncs", nil, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Basic")
	resp, _ = c.do("GET", "/metrics", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "/metrics stays open for Prometheus")
}

// Without a password (loopback), a page answers only a request addressed to a loopback name:
// a page of another site whose name was made to resolve to 127.0.0.1 (DNS rebinding) is
// same-origin for the browser, could read the CSRF token and queue a sync, but its Host and
// Origin name the other site. Such a request is refused and nothing is queued.
func TestLoopbackRefusesForeignHost(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			d := setupDemo(t, backend)
			pages, err := web.New(d.rt, web.Options{})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			c := client{t: t, base: srv.URL}
			port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
			evil := "rebind.evil.example" + port

			resp, body := c.do("GET", "/syncs", nil, map[string]string{"Host": evil})
			require.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode, "a foreign Host is refused")
			require.NotContains(t, body, `name="csrf"`)
			require.Contains(t, body, "loopback")
			for _, path := range []string{"/riverui/", "/metrics"} {
				resp, _ = c.do("GET", path, nil, map[string]string{"Host": evil})
				require.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode, path)
			}

			_, body = c.do("GET", "/syncs", nil, nil)
			i := strings.Index(body, `name="csrf" value="`)
			require.Positive(t, i)
			token := body[i+len(`name="csrf" value="`):]
			token = token[:strings.IndexByte(token, '"')]
			form := url.Values{"csrf": {token}}
			for _, h := range []map[string]string{
				{"Host": evil, "Origin": "http://" + evil, "Sec-Fetch-Site": "same-origin"},
				{"Host": evil},
				{"Origin": "http://" + evil, "Sec-Fetch-Site": "same-origin"},
			} {
				resp, _ = c.do("POST", "/syncs/"+syncName+"/run", form, h)
				require.Contains(t, []int{http.StatusMisdirectedRequest, http.StatusForbidden}, resp.StatusCode, h)
			}
			queued, err := d.rt.Jobs(t.Context())
			require.NoError(t, err)
			require.Empty(t, queued, "no foreign request queued a sync")

			for _, host := range []string{"localhost" + port, "127.0.0.1" + port, "[::1]" + port} {
				resp, _ = c.do("GET", "/syncs", nil, map[string]string{"Host": host})
				require.Equal(t, http.StatusOK, resp.StatusCode, host)
			}
			resp, _ = c.do("POST", "/syncs/"+syncName+"/run", form,
				map[string]string{"Host": "localhost" + port, "Origin": "http://localhost" + port, "Sec-Fetch-Site": "same-origin"})
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
			queued, err = d.rt.Jobs(t.Context())
			require.NoError(t, err)
			require.Len(t, queued, 1)
		})
	}
}

// A run's rejects are listed RejectsPerPage at a time, in source order.
func TestRejectsArePaged(t *testing.T) {
	t.Parallel()
	d := setupDemo(t, "sqlite")
	var b strings.Builder
	b.WriteString("E-post\n")
	const bad = web.RejectsPerPage*2 + 7
	for i := range bad {
		fmt.Fprintf(&b, "bad-%d\n", i)
	}
	path := filepath.Join(t.TempDir(), "bad.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	id, err := d.rt.EnqueueImport(t.Context(), jobs.ImportArgs{Path: path, ListID: d.listID})
	require.NoError(t, err)
	run, err := d.rt.Wait(t.Context(), id, nil)
	require.NoError(t, err)
	require.Equal(t, int64(bad), run.Counts.Rejected)

	pages, err := web.New(d.rt, web.Options{Password: password})
	require.NoError(t, err)
	srv := httptest.NewServer(pages)
	defer srv.Close()
	c := client{t: t, base: srv.URL, auth: "Bearer " + password}
	next := fmt.Sprintf("/runs/%d", run.ID)
	var lines []string
	for next != "" {
		resp, body := c.do("GET", next, nil, nil)
		require.Equal(t, 200, resp.StatusCode)
		rows := regexp.MustCompile(`<tr><td class="n">(\d+)</td>`).FindAllStringSubmatch(body, -1)
		require.LessOrEqual(t, len(rows), web.RejectsPerPage)
		for _, r := range rows {
			lines = append(lines, r[1])
		}
		next = ""
		if m := regexp.MustCompile(`<a href="([^"]+)" id="next-rejects">`).FindStringSubmatch(body); m != nil {
			next = html.UnescapeString(m[1])
		}
	}
	require.Len(t, lines, bad)
	for i, l := range lines {
		require.Equal(t, fmt.Sprint(i+2), l, "line %d", i)
	}
}

// Every page of subsync's sends a Content-Security-Policy that allows no inline script and no
// framing, X-Frame-Options and nosniff; an error page too.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	d := setupDemo(t, "sqlite")
	pages, err := web.New(d.rt, web.Options{Password: password})
	require.NoError(t, err)
	srv := httptest.NewServer(pages)
	defer srv.Close()
	c := client{t: t, base: srv.URL, auth: "Bearer " + password}
	for _, path := range []string{"/runs", fmt.Sprintf("/runs/%d", d.importID), "/syncs", "/suppression", "/health",
		"/static/style.css", "/runs/999999", fmt.Sprintf("/runs/%d/rejects.csv", d.importID)} {
		resp, _ := c.do("GET", path, nil, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "script-src 'self'", path)
		require.Contains(t, csp, "frame-ancestors 'none'", path)
		require.NotContains(t, csp, "unsafe-inline", path)
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), path)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
	}
}
