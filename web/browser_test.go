package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/browser"
	"github.com/subsync/subsync/internal/export"
	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
	"github.com/subsync/subsync/web"
)

// ScreenshotDirEnv overrides where the browser tests write their screenshots
// (default web/testdata/screenshots, one directory per database).
const screenshotDirEnv = "SUBSYNC_SCREENSHOTS"

const (
	password  = "pages-pass-that-must-not-show"
	syncName  = "kontakter"
	leaverTo  = "kari.nordmann@example.no"
	secretDSN = "postgres://crm:dsn-pass-that-must-not-show@crm/crm"
)

// demo is a runtime after a demo-like day: an import of a Norwegian CSV with rejects and a
// status pull that learnt of an unsubscribe.
type demo struct {
	rt       *jobs.Runtime
	emu      *sinktest.Server
	importID int64
	pullID   int64
	listID   int64
	contacts string // the sync's CSV file
}

func contactsCSV(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("E-post;Fornavn;Etternavn;Mobil;Fødselsdato;Kjønn\n")
	b.WriteString(leaverTo + ";Kari;Nordmann;+4791234567;;\n")
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "person%d@example.no;Ola%d;Hansen;;;\n", i, i)
	}
	b.WriteString("ikke-en-epost;Per;Feil;;;\n")
	b.WriteString("=HYPERLINK(\"http://x\");Eva;Formel;;;\n")
	b.WriteString("lise@example.no;Lise;Telefon;12ab;31.02.1990;kanskje\n") // three problems
	path := filepath.Join(dir, "kontakter.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

func setupDemo(t *testing.T, backend string) *demo {
	t.Helper()
	ctx := context.Background()
	emu := sinktest.NewServer(t)
	d := &demo{emu: emu, listID: emu.CreateList("Nyhetsbrev")}
	dir := t.TempDir()
	path := contactsCSV(t, dir)
	d.contacts = path
	cfg := jobs.Config{
		DataDir: dir, LeaseTTL: time.Second, PollInterval: 20 * time.Millisecond, ShutdownTimeout: 5 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
		Sink: sink.Config{BaseURL: emu.URL, UserID: emu.User, APIKey: emu.Key, RequestsPerSecond: -1,
			HTTPClient: emu.Client(), BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond},
		Syncs: []jobs.SyncSpec{
			{Name: syncName, ListID: d.listID, Source: sources.Config{Path: path}, Schedule: "30 2 * * *", TimeZone: "Europe/Oslo"},
			{Name: "crm", ListID: d.listID, Source: sources.Config{Kind: "sql", Driver: "pgx", DSN: secretDSN, Query: "SELECT 1"}},
		},
		StatusPull: jobs.StatusPullSpec{Schedule: "*/15 * * * *",
			WriteBack: jobs.WriteBackSpec{Kind: jobs.WriteBackCSV, Path: filepath.Join(dir, "statuses.csv")}},
		Notify: jobs.NotifySpec{WebhookURL: "https://hooks.example.com/services/hook-secret-that-must-not-show"},
	}
	if backend == "postgres" {
		cfg.DatabaseURL, _ = testdb.PostgresSchema(t)
	}
	rt, err := jobs.Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(rt.Close)
	d.rt = rt

	id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: d.listID})
	require.NoError(t, err)
	run, err := rt.Wait(ctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, int64(3), run.Counts.Rejected, "the demo file has three bad rows")
	d.importID = run.ID

	require.NoError(t, emu.SetStatus(leaverTo, d.listID, "unsubscribed"))
	id, err = rt.EnqueueStatusPull(ctx)
	require.NoError(t, err)
	pull, err := rt.Wait(ctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, state.RunCompleted, pull.State, pull.Error)
	d.pullID = pull.ID
	return d
}

func screenshotDir(t *testing.T, backend string) string {
	dir := os.Getenv(screenshotDirEnv)
	if dir == "" {
		dir = filepath.Join("testdata", "screenshots")
	}
	return filepath.Join(dir, backend)
}

// TestPagesInBrowser drives the pages in headless Chromium after a demo-like import with
// rejects and a status pull, on SQLite and Postgres, and writes a screenshot of each page.
func TestPagesInBrowser(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := setupDemo(t, backend)
			tokyo, err := web.LoadTimeZone("Asia/Tokyo")
			require.NoError(t, err)
			pages, err := web.New(d.rt, web.Options{Password: password, TimeZone: tokyo})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			shots := screenshotDir(t, backend)

			b := browser.Start(t)
			// Without the password the browser gets 401.
			anon := b.NewPage(nil)
			require.Equal(t, 200, anon.Navigate(srv.URL+"/healthz"), "/healthz needs no password")
			for _, path := range []string{"/runs", "/suppression?q=kari", fmt.Sprintf("/runs/%d/rejects.csv", d.importID), "/riverui/"} {
				require.Equal(t, "401", string(anon.Eval(fmt.Sprintf(`fetch(%q, {credentials: 'omit'}).then(r => r.status)`, path))), path)
			}

			auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+password))
			p := b.NewPage(map[string]string{"Authorization": auth})
			seen := &strings.Builder{}
			look := func() {
				seen.WriteString(string(p.Eval(`document.documentElement.outerHTML`)))
			}

			// The runs page shows the import, with its rejects counted.
			require.Equal(t, 200, p.Navigate(srv.URL+"/runs"))
			rows := p.Texts("#runs tbody tr")
			require.Len(t, rows, 2, "the import and the status pull")
			require.Contains(t, rows[1], "kontakter.csv")
			require.Contains(t, rows[1], "completed")
			// Each kind of run in its own words: the status pull read changes, it sent nothing.
			require.Regexp(t, `\d+ changes read, \d+ recorded`, rows[0])
			p.Screenshot(filepath.Join(shots, "runs.png"))
			look()

			// Filtering by state keeps the import.
			p.Eval(`document.querySelector('select[name=state]').value = 'completed'`)
			p.Click(`form.filter button`)
			require.Contains(t, p.URL(), "state=completed")
			require.Len(t, p.Texts("#runs tbody tr"), 2)

			// The run page lists its rejects with line, column, code and reason: every problem of
			// a row, the row counted once.
			p.Click(fmt.Sprintf(`a[href="/runs/%d"]`, d.importID))
			require.Contains(t, p.Text("#counts"), "Rejected\t3")
			// Above the paged table, the rejects by code with the first of each.
			require.Equal(t, []string{
				"invalid_email\t2\tline 23 column E-post: ikke-en-epost: the e-mail address has no @",
				"invalid_phone\t1\tline 25 column Mobil: 12ab: the phone number contains \"a\" (only digits, spaces, +, -, . and brackets belong in a phone number)",
			}, p.Texts("#reject-codes tbody tr"))
			rejects := p.Texts("#rejects tbody tr")
			require.Len(t, rejects, 5)
			require.Contains(t, rejects[0], "23\t\tE-post\tikke-en-epost\tinvalid_email")
			require.Contains(t, rejects[1], "invalid_email")
			require.Contains(t, rejects[2], "25\t\tMobil\t12ab\tinvalid_phone")
			require.Contains(t, rejects[3], "\t\tFødselsdato\t31.02.1990\tinvalid_date")
			require.Contains(t, rejects[4], "\t\tKjønn\tkanskje\tinvalid_gender")
			p.Screenshot(filepath.Join(shots, "run.png"))
			look()

			// The download holds the same rejects, formula-safe, as the CLI's export.
			data := p.Download("#download", t.TempDir())
			var want bytes.Buffer
			require.NoError(t, export.Rejects(ctx, d.rt.State(), d.importID, &want, export.Options{}))
			require.Equal(t, want.String(), string(data))
			require.True(t, bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")), "a byte-order mark, for Excel")
			cr := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))))
			cr.Comma = ';' // the source file's delimiter
			recs, err := cr.ReadAll()
			require.NoError(t, err)
			require.Len(t, recs, 4)
			require.Equal(t, []string{"E-post", "Fornavn", "Etternavn", "Mobil", "Fødselsdato", "Kjønn", "subsync:kind", "subsync:line", "subsync:column",
				"subsync:code", "subsync:reason"}, recs[0])
			require.Equal(t, []string{"Mobil; Fødselsdato; Kjønn", "invalid_phone; invalid_date; invalid_gender"}, recs[3][8:10])
			require.Equal(t, `'=HYPERLINK("http://x")`, recs[2][0])

			// The workbook download holds the same rows (nothing quoted: no cell is a formula).
			book := filepath.Join(t.TempDir(), "rejects.xlsx")
			require.NoError(t, os.WriteFile(book, p.Download("#download-xlsx", t.TempDir()), 0o600))
			r, err := sources.Open(ctx, sources.Config{Path: book})
			require.NoError(t, err)
			require.Equal(t, recs[0], r.Header())
			var bookRows [][]string
			for {
				rec, err := r.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				bookRows = append(bookRows, rec.Values)
			}
			require.NoError(t, r.Close())
			require.Len(t, bookRows, 3)
			require.Equal(t, `=HYPERLINK("http://x")`, bookRows[1][0])

			// The status pull's page tells what it did in its words, with no "sent".
			require.Equal(t, 200, p.Navigate(fmt.Sprintf("%s/runs/%d", srv.URL, d.pullID)))
			pull := p.Text("#counts")
			require.Contains(t, pull, "Changes read\t1")
			require.Contains(t, pull, "Recorded\t1")
			require.Contains(t, pull, "Written back\t1")
			require.Contains(t, pull, "Requests\t")
			page := p.Text("main")
			for _, word := range []string{"Sent", "Rows read", "Rejects", "rejects"} {
				require.NotContains(t, page, word, "a status pull sends no rows and rejects none")
			}
			p.Screenshot(filepath.Join(shots, "run-status-pull.png"))

			// The suppression search finds the person who unsubscribed, learnt by the pull.
			require.Equal(t, 200, p.Navigate(srv.URL+"/suppression"))
			require.Contains(t, p.Text("#counts"), "unsubscribed\t1")
			p.Eval(`document.querySelector('input[name=q]').value = 'kari.nord'`)
			p.Click(`form.filter button`)
			entries := p.Texts("#entries tbody tr")
			require.Len(t, entries, 1)
			require.Contains(t, entries[0], leaverTo)
			require.Contains(t, entries[0], "unsubscribed")
			require.Contains(t, entries[0], fmt.Sprintf("run %d", d.pullID))
			p.Screenshot(filepath.Join(shots, "suppression.png"))
			look()

			// "Run now" queues the sync.
			require.Equal(t, 200, p.Navigate(srv.URL+"/syncs"))
			row := p.Text("#syncs tbody tr")
			require.Contains(t, row, "every day at 02:30 30 2 * * *", "the schedule in words beside the cron")
			require.Contains(t, row, "Europe/Oslo")
			require.Contains(t, row, "never")
			// The next run is shown in the pages' time zone (web.time_zone), not the schedule's.
			var next time.Time
			for _, sc := range d.rt.Schedules(time.Now(), 1) {
				if sc.Name == syncName {
					next = sc.Next[0]
				}
			}
			require.Contains(t, row, next.In(tokyo).Format("2006-01-02 15:04:05 JST"))
			require.Contains(t, p.Text("#zone"), "times in Asia/Tokyo")
			require.Contains(t, p.Text("#status-pull"), "every 15 minutes */15 * * * * (UTC)")
			p.Click(`form[action="/syncs/` + syncName + `/run"] button`)
			msg := p.Text("#message")
			require.Contains(t, msg, "sync "+syncName+" queued as job")
			queued, err := d.rt.Jobs(ctx)
			require.NoError(t, err)
			require.Len(t, queued, 1)
			require.Equal(t, jobs.KindSync, queued[0].Kind)
			require.Equal(t, syncName, queued[0].Name)
			require.Contains(t, msg, fmt.Sprintf("job %d", queued[0].ID))
			p.Screenshot(filepath.Join(shots, "syncs.png"))
			look()

			require.Equal(t, 200, p.Navigate(srv.URL+"/health"))
			health := p.Text("#health")
			require.Contains(t, health, "Database\tok")
			require.Contains(t, health, "Subscriber service\treachable")
			require.Contains(t, health, fmt.Sprintf("run %d", d.pullID))
			p.Screenshot(filepath.Join(shots, "health.png"))
			look()

			// River UI's job list loads and shows the queued sync.
			require.Equal(t, 200, p.Navigate(srv.URL+"/riverui/jobs?state=available"))
			p.WaitFor(fmt.Sprintf(`document.body.innerText.includes(%q)`, "sync"))
			p.WaitFor(fmt.Sprintf(`Array.from(document.querySelectorAll('a')).some(a => a.getAttribute('href')?.endsWith('/jobs/%d'))`, queued[0].ID))
			p.Screenshot(filepath.Join(shots, "riverui.png"))

			// No page shows a secret.
			for _, secret := range []string{password, "dsn-pass-that-must-not-show", "hook-secret-that-must-not-show", d.emu.Key} {
				require.NotContains(t, seen.String(), secret)
			}
		})
	}
}
