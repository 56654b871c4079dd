package web_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/browser"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/web"
)

// hostileList is a list title that is markup: the pages must show it as text.
const hostileList = `<script>alert("list")</script>`

// watchForScripts makes every document the tab loads record what no page of subsync's may do
// with what a file, a database or the service holds: an alert (a script ran), a violation of
// the Content-Security-Policy (markup that tried to run a script).
func watchForScripts(p *browser.Page) {
	p.OnEveryDocument(`window.__alerts = []; window.alert = (m) => window.__alerts.push(String(m));
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));`)
}

// noScriptRan checks that nothing the page shows ran or became an element: no alert, no CSP
// violation, no <img src=x>, no inline script (the pages' one script is /static/live.js), no
// element with an event handler attribute (onerror, onload…).
func noScriptRan(t *testing.T, p *browser.Page) {
	t.Helper()
	require.Equal(t, `[[],[],0,0,0]`, string(p.Eval(`[window.__alerts, window.__violations,
  document.querySelectorAll('img[src="x"]').length, document.querySelectorAll('script:not([src="/static/live.js"])').length,
  Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length]`)),
		"on %s", p.URL())
}

// TestImportFromTheBrowser is the import page's test, done by hand in Chromium on SQLite and
// Postgres: /imports/new takes a workbook with a title row (written by openpyxl), and its page
// shows what was found (the sheet, the header on row 3), each column with three values and
// the target the automatic mapping chose; one column's target is changed, the preview shows
// the rows as they would be sent and the bad rows with every reason; the mapping downloads as
// a file that reads back; "Import" opens the run's page, which moves from running to
// completed without a reload; the emulator holds the rows, with the changed column's values.
// A member named <img src=x onerror=alert(1)> and a list titled <script>…</script> show as
// text on every page, and no script runs.
func TestImportFromTheBrowser(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			emu := newGatedEmulator(t)
			emu.CreateList("Andre")
			list := emu.CreateList(hostileList)
			rt := openRuntime(t, backend, emu.Server, t.TempDir(), jobs.Config{})
			startWorker(t, rt)
			pages, err := web.New(rt, web.Options{Password: password})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			shots := screenshotDir(t, backend)
			b := browser.Start(t)
			p := b.NewPage(map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+password))})
			watchForScripts(p)

			// 1. Upload, under a name that is markup too.
			const fileName = "<img src=x onerror=alert(5)> medlemmer.xlsx"
			book, err := os.ReadFile(filepath.Join("testdata", "import", "medlemmer.xlsx"))
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), fileName)
			require.NoError(t, os.WriteFile(path, book, 0o600))
			require.Equal(t, 200, p.Navigate(srv.URL+"/runs"))
			p.Click(`nav a[href="/imports/new"]`)
			p.SetFiles("#file", path)
			p.Screenshot(filepath.Join(shots, "import-1-upload.png"))
			p.Click("#upload-form button")
			require.Regexp(t, `/imports/\d+-[0-9a-f]{32}$`, p.URL())
			upload := p.URL()

			// 2. What was found, and the automatic mapping.
			found := p.Text("#found")
			require.Contains(t, found, "File\t"+fileName)
			require.Equal(t, "Import "+fileName, p.Text("h1"))
			require.Contains(t, found, "Kind\tExcel workbook")
			require.Contains(t, found, "Sheet\tMedlemmer")
			require.Equal(t, `"3"`, string(p.Eval(`document.querySelector('#header_row').value`)), "the header below the title row")
			require.Equal(t, []string{"E-post", "Fornavn", "Etternavn", "Mobil", "Arbeidsgiver", "<svg onload=alert(4)>"},
				evalStrings(t, p, `Array.from(document.querySelectorAll('#columns tbody tr td:first-child'), td => td.innerText)`))
			require.Equal(t, []string{"email", "firstname", "lastname", "phone", "", ""},
				evalStrings(t, p, `Array.from(document.querySelectorAll('#columns select'), s => s.value)`))
			samples := p.Texts("#columns td.samples")
			require.Equal(t, "kari.nordmann@example.no\nhacker@example.no\nola@example.no", samples[0])
			require.Equal(t, "Kari\n<img src=x onerror=alert(1)>\nOla", samples[1], "markup shown as text")
			require.Equal(t, "Nordmann Rør AS\n<b>Bold</b> AS\nFjord Fisk", samples[4])
			require.Contains(t, evalStrings(t, p, `Array.from(document.querySelectorAll('#list option'), o => o.textContent)`),
				fmt.Sprintf("%s (%d)", hostileList, list), "the list's title shown as text")
			noScriptRan(t, p)
			p.Screenshot(filepath.Join(shots, "import-2-found.png"))

			// 3. The column no mapping knows by name is sent as the company; the list chosen.
			p.Eval(`document.querySelector('select[name=col4]').value = 'company'`)
			p.Eval(fmt.Sprintf(`document.querySelector('#list').value = '%d'`, list))
			p.Click("#preview")
			require.Equal(t, upload, p.URL())
			require.Equal(t, "7 rows read: 5 would be sent, 2 rejected (invalid_email 1, invalid_phone 1).", p.Text("#preview-stats"))
			require.Equal(t, []string{"Line", "email", "firstname", "lastname", "phone", "company"}, p.Texts("#preview-rows thead th"))
			rows := p.Texts("#preview-rows tbody tr")
			require.Len(t, rows, 5)
			require.Equal(t, "4\tkari.nordmann@example.no\tKari\tNordmann\t+4791234567\tNordmann Rør AS", rows[0])
			require.Equal(t, "5\thacker@example.no\t<img src=x onerror=alert(1)>\t<script>alert(2)</script>\t\t<b>Bold</b> AS", rows[1])
			rejects := p.Texts("#preview-rejects tbody tr")
			require.Len(t, rejects, 3, "the bad row's two reasons, and the other bad row")
			require.Regexp(t, `^7\tE-post\tikke-en-epost\tinvalid_email\t.+`, rejects[0])
			require.Regexp(t, `^\tMobil\t12ab\tinvalid_phone\t.+`, rejects[1])
			require.Regexp(t, `^10\tMobil\t<img src=x onerror=alert\(3\)>\tinvalid_phone\t`, rejects[2])
			require.Equal(t, []string{"email", "firstname", "lastname", "phone", "company", ""},
				evalStrings(t, p, `Array.from(document.querySelectorAll('#columns select'), s => s.value)`), "the choices kept")
			noScriptRan(t, p)
			p.Screenshot(filepath.Join(shots, "import-3-preview.png"))

			// The mapping as a file for the configuration.
			data := p.Download("#download-mapping", t.TempDir())
			spec, err := mapping.ParseSpec(data)
			require.NoError(t, err, string(data))
			require.Equal(t, mapping.Column{To: "company"}, spec.Columns["Arbeidsgiver"])
			require.Equal(t, mapping.Column{To: "email"}, spec.Columns["E-post"])
			require.Len(t, spec.Columns, 5)

			// 4. Import: the run's page follows the run until it completed, without a reload.
			p.Click("#import")
			require.Regexp(t, `/jobs/\d+$`, p.URL())
			p.Eval(`window.stayed = true`)
			p.WaitFor(`document.querySelector('#run-state')?.innerText === 'running' && document.querySelector('#counts') !== null`)
			require.Contains(t, p.Text("#run-live"), "import "+fileName+" into list")
			// A workbook tells its rows: the bar has a total.
			p.WaitFor(`document.querySelector('#run-done')?.innerText === '0 of 7 rows (0%)'`)
			require.Equal(t, `7`, string(p.Eval(`document.querySelector('#run-progress').max`)))
			p.Screenshot(filepath.Join(shots, "import-4-running.png"))
			emu.Open()
			p.WaitFor(`document.querySelector('#run-state')?.innerText === 'completed'`)
			require.Equal(t, "true", string(p.Eval(`window.stayed === true`)), "no reload")
			counts := p.Text("#counts")
			require.Contains(t, counts, "Sent\t5")
			require.Contains(t, counts, "Rejected\t2")
			require.Contains(t, p.Text("#rejects"), "<img src=x onerror=alert(3)>")
			require.Equal(t, "Neither mapped nor ignored\t<svg onload=alert(4)>", p.Text("#not-sent"))
			noScriptRan(t, p)
			p.Screenshot(filepath.Join(shots, "import-5-completed.png"))

			// The emulator holds the rows, the changed column's values as company.
			subs := emu.ListSubscribers(list)
			require.Len(t, subs, 5)
			kari, ok := emu.SubscriberByEmail("kari.nordmann@example.no")
			require.True(t, ok)
			require.Equal(t, "Nordmann Rør AS", kari.Fields["company"])
			hacker, ok := emu.SubscriberByEmail("hacker@example.no")
			require.True(t, ok)
			require.Equal(t, "<img src=x onerror=alert(1)>", hacker.Fields["firstname"])
			_, ok = emu.SubscriberByEmail("eve@example.no")
			require.False(t, ok, "a rejected row is not sent")

			// One upload, one import: its page is gone.
			require.Equal(t, 410, p.Navigate(upload))
			require.Contains(t, p.Text("#upload-error"), "imported already")

			// The runs list shows the import as text too.
			require.Equal(t, 200, p.Navigate(srv.URL+"/runs"))
			require.Contains(t, p.Text("#runs"), fileName)
			noScriptRan(t, p)
		})
	}
}

func evalStrings(t *testing.T, p *browser.Page, expr string) []string {
	t.Helper()
	var out []string
	raw := p.Eval(expr)
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return out
}

// TestImportCSVFromTheBrowser: a semicolon CSV in Windows-1252 (written by Python's csv
// module) uploaded at /imports/new, on SQLite and Postgres: its page shows what was found (a
// CSV, windows-1252 with no byte-order mark, ';', the header on row 1), one column is set to
// "ignore" by hand, and the preview leaves it out; the mapping file lists it under ignore; the
// import completes and the emulator holds the names whole (ø, Ø, Å, æ).
func TestImportCSVFromTheBrowser(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			emu := newGatedEmulator(t)
			emu.Open()
			list := emu.CreateList("Medlemmer")
			rt := openRuntime(t, backend, emu.Server, t.TempDir(), jobs.Config{})
			startWorker(t, rt)
			pages, err := web.New(rt, web.Options{Password: password})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			shots := screenshotDir(t, backend)
			b := browser.Start(t)
			p := b.NewPage(map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+password))})
			watchForScripts(p)

			require.Equal(t, 200, p.Navigate(srv.URL+"/imports/new"))
			p.SetFiles("#file", filepath.Join("testdata", "import", "medlemmer-1252.csv"))
			p.Click("#upload-form button")
			require.Regexp(t, `/imports/\d+-[0-9a-f]{32}$`, p.URL())

			// What was found: the kind, the encoding, the delimiter, the header's row.
			found := p.Text("#found")
			require.Contains(t, found, "Kind\tCSV text")
			require.NotContains(t, found, "byte-order mark")
			require.Equal(t, `["windows-1252",";","1"]`, string(p.Eval(`['#encoding', '#delimiter', '#header_row'].map(s => document.querySelector(s).value)`)))
			require.Equal(t, []string{"E-post", "Fornavn", "Etternavn", "Postnummer", "Notat"},
				evalStrings(t, p, `Array.from(document.querySelectorAll('#columns tbody tr td:first-child'), td => td.innerText)`))
			samples := p.Texts("#columns td.samples")
			require.Equal(t, "Bjørn\nÅse\nPer", samples[1], "decoded from Windows-1252")
			// Every select offers "ignore" beside "not sent".
			require.Equal(t, []string{"", "ignore"}, evalStrings(t, p, `Array.from(document.querySelectorAll('select[name=col4] option')).slice(0, 2).map(o => o.value)`))
			p.Screenshot(filepath.Join(shots, "import-csv-found.png"))

			// Notat ignored by hand; the preview leaves it out.
			p.Eval(`document.querySelector('select[name=col4]').value = 'ignore'`)
			p.Eval(fmt.Sprintf(`document.querySelector('#list').value = '%d'`, list))
			p.Click("#preview")
			require.Equal(t, `"ignore"`, string(p.Eval(`document.querySelector('select[name=col4]').value`)), "the choice kept")
			require.Equal(t, []string{"Line", "email", "firstname", "lastname", "zip"}, p.Texts("#preview-rows thead th"))
			require.Equal(t, "2\tbjorn@example.no\tBjørn\tØdegård\t0150", p.Texts("#preview-rows tbody tr")[0])
			require.Regexp(t, `^4\tE-post\tikke-en-epost\tinvalid_email\t`, p.Text("#preview-rejects tbody tr"))
			p.Screenshot(filepath.Join(shots, "import-csv-preview.png"))

			// The mapping file says so, and reads back.
			spec, err := mapping.ParseSpec(p.Download("#download-mapping", t.TempDir()))
			require.NoError(t, err)
			require.Equal(t, []string{"Notat"}, spec.Ignore)
			require.Equal(t, mapping.Column{To: "email"}, spec.Columns["E-post"])

			p.Click("#import")
			p.WaitFor(`document.querySelector('#run-state')?.innerText === 'completed'`)
			require.Contains(t, p.Text("#counts"), "Sent\t3")
			require.Equal(t, "Ignored by the mapping\tNotat", p.Text("#not-sent"))
			noScriptRan(t, p)
			bjorn, ok := emu.SubscriberByEmail("bjorn@example.no")
			require.True(t, ok)
			require.Equal(t, []string{"Bjørn", "Ødegård"}, []string{bjorn.Fields["firstname"], bjorn.Fields["lastname"]})
			aase, ok := emu.SubscriberByEmail("aase@example.no")
			require.True(t, ok)
			require.Equal(t, "Bækkelund", aase.Fields["lastname"])
			require.Len(t, emu.ListSubscribers(list), 3)
		})
	}
}
