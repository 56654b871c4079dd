package web_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/browser"
	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
	"github.com/subsync/subsync/web"
)

// openRuntime opens a jobs runtime on backend ("sqlite" or "postgres") over the emulator,
// with cfg's syncs and status pull.
func openRuntime(t *testing.T, backend string, emu *sinktest.Server, dir string, cfg jobs.Config) *jobs.Runtime {
	t.Helper()
	cfg.DataDir, cfg.LeaseTTL, cfg.PollInterval, cfg.ShutdownTimeout = dir, time.Second, 20*time.Millisecond, 5*time.Second
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Sink = sink.Config{BaseURL: emu.URL, UserID: emu.User, APIKey: emu.Key, RequestsPerSecond: -1,
		HTTPClient: emu.Client(), BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond}
	if backend == "postgres" {
		cfg.DatabaseURL, _ = testdb.PostgresSchema(t)
	}
	rt, err := jobs.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(rt.Close)
	return rt
}

// members writes the members file of the story: Kundenr;E-post;Fornavn;Mobil;Notat;Intern,
// keyed K1..Kn, person i at email(i); person 3's phone is not a phone number, and their name
// changes with round (so that each sync sends them again).
func members(t *testing.T, path string, round, n int, email func(i int) string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("Kundenr;E-post;Fornavn;Mobil;Notat;Intern\n")
	for i := 1; i <= n; i++ {
		phone := fmt.Sprintf("+47912345%02d", i)
		if i == 3 {
			phone = "12ab"
		}
		name := fmt.Sprintf("Ola%d", i)
		if i == 3 {
			name = fmt.Sprintf("Kari (%d)", round)
		}
		fmt.Fprintf(&b, "K%d;%s;%s;%s;note %d;x\n", i, email(i), name, phone, i)
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
}

// TestRunPageTellsTheStory: a sync whose mapping drops an invalid phone number, leaves one
// column unmapped and ignores another, and whose second run finds two people gone and one
// key at a new address, shows on its run page, in Chromium, the value it dropped (line,
// column, code, reason), the columns it did not send, and whom it unsubscribed and why (the
// new address of the one who moved); without the password the addresses are masked. On
// SQLite and Postgres.
func TestRunPageTellsTheStory(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			emu := sinktest.NewServer(t)
			list := emu.CreateList("Medlemmer")
			dir := t.TempDir()
			path := filepath.Join(dir, "medlemmer.csv")
			old := func(i int) string { return fmt.Sprintf("person%d@example.no", i) }
			members(t, path, 1, 20, old)
			rt := openRuntime(t, backend, emu, dir, jobs.Config{Syncs: []jobs.SyncSpec{{
				Name: "medlemmer", ListID: list, Source: sources.Config{Path: path},
				Removed: jobs.RemovedUnsubscribe, MaxRemovals: "50%",
				Mapping: &mapping.Spec{Columns: map[string]mapping.Column{
					"Kundenr": {To: "external_id"}, "E-post": {To: "email"}, "Fornavn": {To: "firstname"},
					"Mobil": {To: "phone", OnInvalid: mapping.OnInvalidDrop}}, Ignore: []string{"Intern"}},
			}}})
			syncNow := func() state.Run {
				t.Helper()
				id, err := rt.EnqueueSync(ctx, "medlemmer", false)
				require.NoError(t, err)
				run, err := rt.Wait(ctx, id, nil)
				require.NoError(t, err)
				require.Equal(t, state.RunCompleted, run.State, run.Error)
				return run
			}
			syncNow()
			// Persons 19 and 20 leave; person 1 (K1) comes with a new address.
			members(t, path, 2, 18, func(i int) string {
				if i == 1 {
					return "ny.adresse@example.no"
				}
				return old(i)
			})
			run := syncNow()
			require.Equal(t, int64(3), run.Counts.Removed)

			pages, err := web.New(rt, web.Options{Password: password})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			b := browser.Start(t)
			p := b.NewPage(map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+password))})
			require.Equal(t, 200, p.Navigate(fmt.Sprintf("%s/runs/%d", srv.URL, run.ID)))

			require.Contains(t, p.Text("#counts"), "Removed (unsubscribed)\t3")
			require.Contains(t, p.Text("#warnings-title"), "Values dropped (1)")
			require.Contains(t, p.Text("#warning-codes"), "invalid_phone\t1\tline 4 column Mobil:")
			warnings := p.Texts("#warnings tbody tr")
			require.Len(t, warnings, 1)
			require.Contains(t, warnings[0], "4\t\tMobil\t12ab\tinvalid_phone\t")

			notSent := p.Text("#not-sent")
			require.Contains(t, notSent, "Neither mapped nor ignored\tNotat")
			require.Contains(t, notSent, "Ignored by the mapping\tIntern")

			require.Equal(t, "2 who left the source, 1 old addresses of changed keys.", p.Text("#removed-counts"))
			removed := p.Texts("#removed tbody tr")
			require.Equal(t, []string{
				"person1@example.no\tmoved to a new address\tny.adresse@example.no",
				"person19@example.no\tleft the source\t",
				"person20@example.no\tleft the source\t",
			}, removed)
			p.Screenshot(filepath.Join(screenshotDir(t, backend), "run-story.png"))

			// The same page without the password (loopback) masks every address.
			open, err := web.New(rt, web.Options{})
			require.NoError(t, err)
			anon := httptest.NewServer(open)
			defer anon.Close()
			q := b.NewPage(nil)
			require.Equal(t, 200, q.Navigate(fmt.Sprintf("%s/runs/%d", anon.URL, run.ID)))
			masked := q.Text("#removed")
			require.NotContains(t, masked, "person19@example.no")
			require.NotContains(t, masked, "ny.adresse@example.no")
			require.Contains(t, masked, "p***@example.no")
			require.Contains(t, masked, "n***@example.no")
		})
	}
}
