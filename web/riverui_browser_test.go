package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/browser"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/web"
)

// TestRiverUISecurityHeaders: River UI's answers (its page, its scripts and styles, its API)
// carry a Content-Security-Policy that forbids framing and other origins' scripts, with
// X-Frame-Options and nosniff; and in Chromium River UI still renders under that policy (the
// queued job listed, with no policy violation reported), on SQLite and Postgres.
func TestRiverUISecurityHeaders(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			d := setupDemo(t, backend)
			job, err := d.rt.EnqueueSync(t.Context(), syncName, false)
			require.NoError(t, err)
			pages, err := web.New(d.rt, web.Options{})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			c := client{t: t, base: srv.URL}

			_, index := c.do("GET", jobs.RiverUIPrefix+"/", nil, nil)
			assets := regexp.MustCompile(`(?:src|href)="(`+jobs.RiverUIPrefix+`/assets/[^"]+)"`).FindAllStringSubmatch(index, -1)
			require.Len(t, assets, 2, "River UI's script and stylesheet")
			paths := []string{jobs.RiverUIPrefix + "/", jobs.RiverUIPrefix + "/jobs?state=available",
				fmt.Sprintf("%s/api/jobs/%d", jobs.RiverUIPrefix, job), jobs.RiverUIPrefix + "/favicon.ico"}
			for _, a := range assets {
				paths = append(paths, a[1])
			}
			for _, path := range paths {
				resp, _ := c.do("GET", path, nil, nil)
				require.Equal(t, http.StatusOK, resp.StatusCode, path)
				csp := resp.Header.Get("Content-Security-Policy")
				require.Contains(t, csp, "frame-ancestors 'none'", path)
				require.Contains(t, csp, "script-src 'self'", path)
				require.Contains(t, csp, "object-src 'none'", path)
				require.NotRegexp(t, `script-src[^;]*(unsafe-inline|unsafe-eval)`, csp, path)
				require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), path)
				require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
			}

			b := browser.Start(t)
			p := b.NewPage(nil)
			p.OnEveryDocument(`window.cspViolations = [];
				document.addEventListener('securitypolicyviolation', e => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));`)
			require.Equal(t, 200, p.Navigate(srv.URL+jobs.RiverUIPrefix+"/jobs?state=available"))
			p.WaitFor(fmt.Sprintf(`Array.from(document.querySelectorAll('a')).some(a => a.getAttribute('href')?.endsWith('/jobs/%d'))`, job))
			p.WaitFor(`getComputedStyle(document.body).backgroundColor !== 'rgba(0, 0, 0, 0)'`) // its stylesheet applied
			require.Equal(t, 200, p.Navigate(fmt.Sprintf("%s%s/jobs/%d", srv.URL, jobs.RiverUIPrefix, job)))
			p.WaitFor(fmt.Sprintf(`document.body.innerText.includes(%q)`, jobs.KindSync))
			// The one violation allowed is River UI's probe for eval (zod's, in a try/catch): the
			// policy forbids eval and River UI works without it.
			require.Equal(t, "[]", string(p.Eval(`window.cspViolations.filter(v => v !== 'script-src eval')`)),
				"River UI runs under the policy")
		})
	}
}
