package web_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/browser"
	"github.com/subsync/subsync/state"
	"github.com/subsync/subsync/web"
)

// TestSyncPageChart: after three runs of a sync (all 20 sent, then nothing changed, then 5
// changed; 3 bad rows rejected each time), its page, in Chromium, charts them oldest first,
// each measure on its own scale (the sent bars 40, 0 and 10 pixels high), and lists them; on
// SQLite and Postgres.
func TestSyncPageChart(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := setupDemo(t, backend)
			sync := func(full bool) state.Run {
				t.Helper()
				id, err := d.rt.EnqueueSync(ctx, syncName, full)
				require.NoError(t, err)
				run, err := d.rt.Wait(ctx, id, nil)
				require.NoError(t, err)
				require.Equal(t, state.RunCompleted, run.State, run.Error)
				return run
			}
			first := sync(true) // the import sent these rows to the list already
			second := sync(false)
			data, err := os.ReadFile(d.contacts)
			require.NoError(t, err)
			changed := string(data)
			for i := 1; i <= 5; i++ {
				changed = strings.Replace(changed, fmt.Sprintf(";Ola%d;", i), fmt.Sprintf(";Ole%d;", i), 1)
			}
			require.NoError(t, os.WriteFile(d.contacts, []byte(changed), 0o600))
			third := sync(false)
			// 20 sent (one unsubscribed is suppressed), then none, then the 5 changed.
			require.Equal(t, []int64{20, 0, 5}, []int64{first.Counts.Sent, second.Counts.Sent, third.Counts.Sent})
			require.Equal(t, []int64{0, 20, 15}, []int64{first.Counts.Unchanged, second.Counts.Unchanged, third.Counts.Unchanged})

			pages, err := web.New(d.rt, web.Options{Password: password})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			b := browser.Start(t)
			p := b.NewPage(map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+password))})
			require.Equal(t, 200, p.Navigate(srv.URL+"/syncs"))
			p.Click(`#syncs a[href="/syncs/` + syncName + `"]`)
			require.Contains(t, p.Text("h1"), "Sync "+syncName)
			require.Contains(t, p.Text("#sync-facts"), "every day at 02:30 30 2 * * * (Europe/Oslo)")

			heights := func(measure string) string {
				return string(p.Eval(fmt.Sprintf(`Array.from(document.querySelectorAll('#history g[data-measure=%s] rect'),
  r => [Number(r.dataset.run), Math.round(r.getBoundingClientRect().height)])`, measure)))
			}
			runs := []int64{first.ID, second.ID, third.ID}
			require.Equal(t, fmt.Sprintf("[[%d,40],[%d,0],[%d,10]]", runs[0], runs[1], runs[2]), heights("sent"))
			require.Equal(t, fmt.Sprintf("[[%d,0],[%d,40],[%d,30]]", runs[0], runs[1], runs[2]), heights("unchanged"))
			require.Equal(t, fmt.Sprintf("[[%d,40],[%d,40],[%d,40]]", runs[0], runs[1], runs[2]), heights("rejected"), "3 bad rows each time")
			require.Equal(t, "[3,3,3,3,3]", string(p.Eval(`Array.from(document.querySelectorAll('#history g.strip'), g => g.querySelectorAll('rect').length)`)))
			// The stylesheet colours the bars (the CSP lets no inline style through).
			require.Equal(t, `"rgb(36, 87, 197)"`, string(p.Eval(`getComputedStyle(document.querySelector('#history rect.bar-sent')).fill`)))
			rows := p.Texts("#sync-runs tbody tr")
			require.Len(t, rows, 3)
			require.Contains(t, rows[0], fmt.Sprintf("%d\tcompleted", third.ID))
			require.Contains(t, rows[0], "\t24\t5\t15\t3\t0\t", "read, sent, unchanged, rejected, removed")
			p.Screenshot(filepath.Join(screenshotDir(t, backend), "sync.png"))
		})
	}
}
