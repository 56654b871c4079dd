package web_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/browser"
	"github.com/subsync/subsync/state"
	"github.com/subsync/subsync/web"
)

// TestOperatorActions, in Chromium: "Pull statuses now" and "Reconcile now" beside the status
// pull queue the jobs `subsync status pull` and `subsync status reconcile` queue and open the
// job's page, which follows it to its end; the erasure page, for a signed-in user only, shows
// forget's dry run first and erases on confirmation, and the erasure's run page names nobody.
func TestOperatorActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := setupDemo(t, "sqlite")
	startWorker(t, d.rt)
	pages, err := web.New(d.rt, web.Options{Password: password})
	require.NoError(t, err)
	srv := httptest.NewServer(pages)
	defer srv.Close()
	shots := screenshotDir(t, "sqlite")
	b := browser.Start(t)
	p := b.NewPage(map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+password))})

	require.Equal(t, 200, p.Navigate(srv.URL+"/syncs"))
	p.Screenshot(filepath.Join(shots, "syncs-actions.png"))
	p.Click("#pull-now")
	require.Regexp(t, `/jobs/\d+$`, p.URL())
	p.WaitFor(`document.querySelector('#run-state')?.innerText === 'completed'`)
	require.Contains(t, p.Text("#counts"), "Changes read\t")
	pull, err := d.rt.State().Runs(ctx, state.RunFilter{Kind: state.KindStatusPull, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, "status", pull[0].Name, "the CLI's status pull")
	require.Equal(t, fmt.Sprintf("Run %d", pull[0].ID), p.Text("h1"))

	require.Equal(t, 200, p.Navigate(srv.URL+"/syncs"))
	p.Click("#reconcile-now")
	p.WaitFor(`document.querySelector('#run-state')?.innerText === 'completed'`)
	require.Contains(t, p.Text("#counts"), "Unsubscribed or bounced found\t")
	rec, err := d.rt.State().Runs(ctx, state.RunFilter{Kind: state.KindStatusPull, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, "reconcile", rec[0].Name, "the CLI's reconciliation")

	// The erasure: the dry run first, changing nothing.
	_, inService := d.emu.SubscriberByEmail(leaverTo)
	require.True(t, inService)
	require.Equal(t, 200, p.Navigate(srv.URL+"/runs"))
	p.Click(`nav a[href="/forget"]`)
	p.Eval(fmt.Sprintf(`document.querySelector('#emails').value = %q`, " "+strings.ToUpper(leaverTo)+"\n"))
	p.Click(`#forget-form button`)
	plan := p.Texts("#forget-plan tbody tr")
	require.Len(t, plan, 1)
	require.Contains(t, plan[0], leaverTo)
	require.Regexp(t, `subscriber \d+: deleted`, plan[0])
	require.Contains(t, plan[0], "subsync_suppression 1")
	p.Screenshot(filepath.Join(shots, "forget-check.png"))
	_, inService = d.emu.SubscriberByEmail(leaverTo)
	require.True(t, inService, "the dry run erases nobody")

	p.Click(`#forget-confirm button`)
	p.WaitFor(`document.querySelector('#run-state')?.innerText === 'completed'`)
	require.Contains(t, p.Text("#counts"), "Erased\t1")
	require.Contains(t, p.Text("#counts"), "Deleted in the service\t1")
	require.NotContains(t, p.Text("main"), leaverTo, "the erasure's page names nobody")
	require.NotContains(t, strings.ToLower(p.Text("main")), "kari")
	p.Screenshot(filepath.Join(shots, "forget-done.png"))
	_, inService = d.emu.SubscriberByEmail(leaverTo)
	require.False(t, inService)
	erased, err := d.rt.State().IsErased(ctx, leaverTo)
	require.NoError(t, err)
	require.True(t, erased)

	// Without the password the erasure page is refused, and its link is not shown.
	open, err := web.New(d.rt, web.Options{})
	require.NoError(t, err)
	anon := httptest.NewServer(open)
	defer anon.Close()
	q := b.NewPage(nil)
	require.Equal(t, 403, q.Navigate(anon.URL+"/forget"))
	require.Equal(t, 200, q.Navigate(anon.URL+"/syncs"))
	require.Equal(t, "0", string(q.Eval(`document.querySelectorAll('a[href="/forget"]').length`)))
	c := client{t: t, base: anon.URL}
	resp, _ := c.do("POST", "/forget", url.Values{"emails": {"x@example.com"}}, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	// An action without the form's token is refused.
	resp, _ = c.do("POST", "/status/pull", url.Values{}, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}
