package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/browser"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/state"
	"github.com/subsync/subsync/web"
)

// TestRunPageShowsFiltered: an import whose mapping's where = 'Land == "NO"' keeps two rows of
// four shows, on its run page in Chromium, 2 sent and 2 filtered, none rejected, and the runs
// list shows its 2 filtered. On SQLite and Postgres.
func TestRunPageShowsFiltered(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			emu := sinktest.NewServer(t)
			list := emu.CreateList("Medlemmer")
			dir := t.TempDir()
			path := filepath.Join(dir, "land.csv")
			require.NoError(t, os.WriteFile(path, []byte("E-post,Navn,Land\n"+
				"kari@example.no,Kari Nordmann,NO\nsven@example.se,Sven Svensson,SE\n"+
				"ola@example.no,Ola Hansen,NO\njohn@example.com,John Smith,US\n"), 0o600))
			rt := openRuntime(t, backend, emu, dir, jobs.Config{})
			spec, err := mapping.ParseSpec([]byte(`where = 'Land == "NO"'`))
			require.NoError(t, err)
			id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: list, Mapping: &spec})
			require.NoError(t, err)
			run, err := rt.Wait(ctx, id, nil)
			require.NoError(t, err)
			require.Equal(t, state.RunCompleted, run.State, run.Error)

			pages, err := web.New(rt, web.Options{})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			p := browser.Start(t).NewPage(nil)
			require.Equal(t, 200, p.Navigate(fmt.Sprintf("%s/runs/%d", srv.URL, run.ID)))
			counts := p.Text("#counts")
			require.Contains(t, counts, "Sent\t2")
			require.Contains(t, counts, "Rejected\t0")
			require.Contains(t, counts, "Filtered (where)\t2")

			// And the runs list, in its own column.
			require.Equal(t, 200, p.Navigate(srv.URL+"/runs"))
			require.Equal(t, "2", p.Text("#runs tbody tr td[data-count=filtered]"))
		})
	}
}
