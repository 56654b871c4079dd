package web_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/browser"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
	"github.com/subsync/subsync/web"
)

const (
	// hostileName is the name of a contact in the source file, and their phone number (a value
	// dropped) and another row's e-mail address (a reject).
	hostileName = `<img src=x onerror=alert(1)>`
	// hostileColumn is a column of the source file that nothing maps.
	hostileColumn = `<svg onload=alert(4)>`
	// hostileFile is the source file's name.
	hostileFile = `<img src=x onerror=alert(6)>.csv`
)

// hostileMembers writes the source file: person 1 is named hostileName and has it as their
// phone number, person 2 has it as their e-mail address, persons 3..n are plain; everyone's
// last name changes with round, so that each sync sends them again.
func hostileMembers(t *testing.T, path string, round, n int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("Kundenr;E-post;Fornavn;Etternavn;Mobil;" + hostileColumn + "\n")
	fmt.Fprintf(&b, "K1;person1@example.no;%s;Runde%d;%s;x\n", hostileName, round, hostileName)
	fmt.Fprintf(&b, "K2;%s;Per;Runde%d;;x\n", hostileName, round)
	for i := 3; i <= n; i++ {
		fmt.Fprintf(&b, "K%d;person%d@example.no;Ola%d;Runde%d;+47912345%02d;x\n", i, i, i, round, i)
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
}

// TestHostileDataShownAsText: a contact named <img src=x onerror=alert(1)> in a source file
// (their phone number that too, dropped; another row's address that too, rejected), a column
// and a file named with markup, and a list titled <script>…</script>, after an import, two
// runs of a sync (the second unsubscribing someone) and a status pull, on SQLite and
// Postgres: every page that shows them (the runs list, the run pages with their rejects,
// values dropped, columns not sent and people unsubscribed, the syncs and the sync's page,
// the suppression page, the erasure page's check and its error, the upload and import pages)
// shows them as text, in Chromium with the Content-Security-Policy bypassed, so that the
// escaping alone is tested: no alert, no element made from the data, no script but the
// pages' own. An HTML document uploaded is read as a CSV (its line a column, shown as text),
// never served back as a page.
func TestHostileDataShownAsText(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			emu := sinktest.NewServer(t)
			list := emu.CreateList(hostileList)
			dir := t.TempDir()
			path := filepath.Join(dir, hostileFile)
			hostileMembers(t, path, 1, 6)
			rt := openRuntime(t, backend, emu, dir, jobs.Config{Syncs: []jobs.SyncSpec{{
				Name: "medlemmer", ListID: list, Source: sources.Config{Path: path},
				Removed: jobs.RemovedUnsubscribe, MaxRemovals: "50%",
				Mapping: &mapping.Spec{Columns: map[string]mapping.Column{
					"Kundenr": {To: "external_id"}, "E-post": {To: "email"}, "Fornavn": {To: "firstname"},
					"Etternavn": {To: "lastname"}, "Mobil": {To: "phone", OnInvalid: mapping.OnInvalidDrop}}},
			}}})
			wait := func(id int64, err error) state.Run {
				t.Helper()
				require.NoError(t, err)
				run, err := rt.Wait(ctx, id, nil)
				require.NoError(t, err)
				require.Equal(t, state.RunCompleted, run.State, run.Error)
				return run
			}
			imp := wait(rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: list}))
			require.Equal(t, int64(2), imp.Counts.Rejected, "the hostile address and the hostile phone")
			wait(rt.EnqueueSync(ctx, "medlemmer", false))
			hostileMembers(t, path, 2, 5) // person 6 leaves
			syncRun := wait(rt.EnqueueSync(ctx, "medlemmer", false))
			require.Equal(t, int64(1), syncRun.Counts.Removed)
			named, ok := emu.SubscriberByEmail("person1@example.no")
			require.True(t, ok)
			require.Equal(t, hostileName, named.Fields["firstname"], "the service holds the name as it is")
			require.NoError(t, emu.SetStatus("person1@example.no", list, "unsubscribed"))
			wait(rt.EnqueueStatusPull(ctx))

			pages, err := web.New(rt, web.Options{Password: password})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			b := browser.Start(t)
			p := b.NewPage(map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+password))})
			p.BypassCSP()
			watchForScripts(p)
			shots := screenshotDir(t, backend)
			visit := func(path string) {
				t.Helper()
				require.Equal(t, 200, p.Navigate(srv.URL+path), path)
				noScriptRan(t, p)
			}

			// The runs list: the import under the file's name.
			visit("/runs")
			require.Contains(t, p.Text("#runs"), hostileFile)

			// The import's page: its name, and the rejects (summary and table) with the values.
			visit(fmt.Sprintf("/runs/%d", imp.ID))
			require.Contains(t, p.Text("#run-live p"), "import "+hostileFile)
			codes := strings.Join(p.Texts("#reject-codes tbody tr"), "\n")
			require.Contains(t, codes, "column E-post: "+hostileName+": ")
			require.Contains(t, codes, "column Mobil: "+hostileName+": ")
			rejects := strings.Join(p.Texts("#rejects tbody tr"), "\n")
			require.Contains(t, rejects, "E-post\t"+hostileName+"\tinvalid_email")
			require.Contains(t, rejects, "Mobil\t"+hostileName+"\tinvalid_phone")
			require.Contains(t, p.Text("#not-sent"), hostileColumn)

			// The sync's second run: the source named, the reject, the value dropped, the column
			// not sent, the person unsubscribed.
			visit(fmt.Sprintf("/runs/%d", syncRun.ID))
			require.Contains(t, p.Text("#run-live p"), "from "+path)
			require.Contains(t, p.Text("#rejects"), "E-post\t"+hostileName+"\tinvalid_email")
			require.Contains(t, p.Text("#warning-codes"), "invalid_phone\t1\tline 2 column Mobil:")
			warnings := p.Texts("#warnings tbody tr")
			require.Len(t, warnings, 1)
			require.Contains(t, warnings[0], "2\t\tMobil\t"+hostileName+"\tinvalid_phone\t")
			require.Equal(t, "Neither mapped nor ignored\t"+hostileColumn, p.Text("#not-sent"))
			require.Equal(t, []string{"person6@example.no\tleft the source\t"}, p.Texts("#removed tbody tr"))
			p.Screenshot(filepath.Join(shots, "hostile-run.png"))

			// The syncs, the sync's page (chart and table), a message in the address.
			visit("/syncs")
			visit("/syncs/medlemmer")
			require.Len(t, p.Texts("#sync-runs tbody tr"), 2)
			visit("/syncs?error=" + url.QueryEscape(hostileName))
			require.Equal(t, hostileName, p.Text("#message"))

			// The suppression page: the person named with markup, and a search for markup.
			visit("/suppression?q=person1%40example.no")
			require.Contains(t, p.Text("#entries"), "person1@example.no")
			visit("/suppression?q=" + url.QueryEscape(hostileName))
			require.Equal(t, "Nobody on the suppression list matches “"+hostileName+"”.", p.Text("#no-match"))

			// The erasure page: a line of markup is refused and kept in the form as text; a check
			// shows the plan.
			visit("/forget")
			p.Eval(fmt.Sprintf(`document.querySelector('#emails').value = %q`, "person1@example.no\n"+hostileName))
			p.Click(`#forget-form button`)
			noScriptRan(t, p)
			require.Equal(t, "address 2 is not an e-mail address", p.Text("#forget-error"))
			require.Equal(t, `"person1@example.no\n`+strings.ReplaceAll(hostileName, `"`, `\"`)+`"`, string(p.Eval(`document.querySelector('#emails').value.trimEnd()`)))
			p.Eval(`document.querySelector('#emails').value = 'person1@example.no'`)
			p.Click(`#forget-form button`)
			noScriptRan(t, p)
			require.Contains(t, p.Text("#forget-plan"), "person1@example.no")

			// The upload and import pages: the list's title, the name and the column as text.
			visit("/imports/new")
			p.SetFiles("#file", path)
			p.Click("#upload-form button")
			noScriptRan(t, p)
			require.Equal(t, "Import "+hostileFile, p.Text("h1"))
			require.Contains(t, p.Text("#found"), "File\t"+hostileFile)
			require.Contains(t, evalStrings(t, p, `Array.from(document.querySelectorAll('#list option'), o => o.textContent)`),
				fmt.Sprintf("%s (%d)", hostileList, list))
			require.Contains(t, evalStrings(t, p, `Array.from(document.querySelectorAll('#columns tbody tr td:first-child'), td => td.innerText)`),
				hostileColumn)
			require.Contains(t, p.Texts("#columns td.samples")[2], hostileName)
			// With the phone numbers ignored, the person named with markup would be sent.
			p.Eval(`document.querySelector('select[name=col4]').value = 'ignore'`)
			p.Eval(fmt.Sprintf(`document.querySelector('#list').value = '%d'`, list))
			p.Click("#preview")
			noScriptRan(t, p)
			require.Contains(t, p.Texts("#preview-rows tbody tr"), "2\tperson1@example.no\t"+hostileName+"\tRunde2")
			require.Regexp(t, `^3\tE-post\t`+regexp.QuoteMeta(hostileName)+`\tinvalid_email\t`, p.Text("#preview-rejects tbody tr"))
			p.Screenshot(filepath.Join(shots, "hostile-import.png"))

			// An HTML document uploaded is read as what it says it is, never served back as HTML.
			page := filepath.Join(t.TempDir(), "page.html")
			require.NoError(t, os.WriteFile(page, []byte("<html><body><script>alert(7)</script><img src=x onerror=alert(8)></body></html>\n"), 0o600))
			visit("/imports/new")
			p.SetFiles("#file", page)
			p.Click("#upload-form button")
			noScriptRan(t, p)
			require.Contains(t, p.Text("#found"), "Kind\tCSV text")
			require.Equal(t, []string{"<html><body><script>alert(7)</script><img src=x onerror=alert(8)></body></html>"},
				evalStrings(t, p, `Array.from(document.querySelectorAll('#columns tbody tr td:first-child'), td => td.innerText)`),
				"its line read as a header, shown as text")
		})
	}
}
