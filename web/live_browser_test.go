package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/browser"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/web"
)

// gatedEmulator is the emulator behind a gate: each bulkinsert request waits for a token
// from Pass (or for Open), so a test decides when a run's batches are acknowledged.
type gatedEmulator struct {
	*sinktest.Server
	pass chan struct{}
	open chan struct{}
	// first, when set, is an address of the batch Pass lets through: the requests of the
	// other batches wait for Open. A run sends its batches side by side, so without it the
	// request Pass lets through is whichever reached the gate first.
	first string
}

func newGatedEmulator(t *testing.T) *gatedEmulator {
	t.Helper()
	g := &gatedEmulator{pass: make(chan struct{}, 100), open: make(chan struct{})}
	e := sinktest.New()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "bulkinsert") {
			pass := g.pass
			if g.first != "" {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				if !bytes.Contains(body, []byte(`"`+g.first+`"`)) {
					pass = nil // waits for Open
				}
			}
			select {
			case <-pass:
			case <-g.open:
			case <-r.Context().Done():
				return
			}
		}
		e.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		g.Open()
		hs.Close()
	})
	g.Server = &sinktest.Server{Emulator: e, URL: hs.URL + sinktest.V2Prefix, LegacyURL: hs.URL + sinktest.V3Prefix,
		User: sinktest.DefaultUser, Key: sinktest.DefaultKey, HTTP: hs}
	return g
}

// Pass lets one bulkinsert request through.
func (g *gatedEmulator) Pass() { g.pass <- struct{}{} }

// Open lets every request through from now on.
func (g *gatedEmulator) Open() {
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// startWorker runs rt as `subsync run` does until the test ends.
func startWorker(t *testing.T, rt *jobs.Runtime) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// TestPagesAreLive: while an import of 3,000 rows runs (its batches held by the service), its
// run page and the runs list, in Chromium, move without a reload: the first batch
// acknowledged shows as 1000 rows done with a rate beside a progress bar, and when
// the rest are let through both pages show the run completed, with its counts, and stop
// looking again.
func TestPagesAreLive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emu := newGatedEmulator(t)
	emu.first = "person1@example.no" // the first batch: its acknowledgement moves the run's position
	list := emu.CreateList("Nyhetsbrev")
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("E-post;Fornavn\n")
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "person%d@example.no;Ola%d\n", i, i)
	}
	path := filepath.Join(dir, "stor.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	rt := openRuntime(t, "sqlite", emu.Server, dir, jobs.Config{})
	startWorker(t, rt)
	job, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: list})
	require.NoError(t, err)

	pages, err := web.New(rt, web.Options{Password: password})
	require.NoError(t, err)
	srv := httptest.NewServer(pages)
	defer srv.Close()
	br := browser.Start(t)
	auth := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+password))}
	runPage := br.NewPage(auth)
	// The job's page is the run's once a worker started it.
	require.Equal(t, 200, runPage.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, job)))
	runPage.Eval(`window.stayed = true`)
	runPage.WaitFor(`document.querySelector('#run-state')?.innerText === 'running'`)
	list2 := br.NewPage(auth)
	require.Equal(t, 200, list2.Navigate(srv.URL+"/runs"))
	list2.Eval(`window.stayed = true`)
	require.Contains(t, list2.Text("#runs tbody tr"), "running")
	require.Equal(t, "1", string(list2.Eval(`document.querySelectorAll('#runs tbody progress').length`)))

	emu.Pass()
	runPage.WaitFor(`document.querySelector('#run-done')?.innerText === '1000 rows'`)
	require.Regexp(t, `^\d+ rows/s$`, runPage.Text("#run-rate"))
	require.Equal(t, "1000", runPage.Text("[data-fact=read]"))
	// The file is read ahead of the rows sent: its bytes cannot tell the share done, so the
	// bar says "under way" (indeterminate) rather than a wrong share.
	require.Equal(t, "true", string(runPage.Eval(`document.querySelector('#run-progress').matches(':indeterminate')`)))
	list2.WaitFor(`document.querySelector('#runs tbody tr td.n')?.innerText === '1000'`)
	runPage.Screenshot(filepath.Join(screenshotDir(t, "sqlite"), "run-live.png"))
	list2.Screenshot(filepath.Join(screenshotDir(t, "sqlite"), "runs-live.png"))

	emu.Open()
	runPage.WaitFor(`document.querySelector('#run-state')?.innerText === 'completed'`)
	require.Contains(t, runPage.Text("#counts"), "Sent\t3000")
	require.Empty(t, runPage.Text("#progress"), "no progress bar once it ended")
	runPage.WaitFor(`!document.querySelector('main').hasAttribute('data-live')`)
	list2.WaitFor(`document.querySelector('#runs tbody tr')?.innerText.includes('completed')`)
	require.Equal(t, "true", string(runPage.Eval(`window.stayed === true`)), "no reload")
	require.Equal(t, "true", string(list2.Eval(`window.stayed === true`)), "no reload")
	require.Equal(t, "Run 1", runPage.Text("h1"))
}
