package main_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
)

// TestBinaryFirstContact walks the first minutes of a new user with the built binary.
func TestBinaryFirstContact(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	noXDG := []string{"XDG_CONFIG_HOME=" + filepath.Join(home, "xdg"), "HOME=" + home}

	// The copied example passes config check as is, with the credentials in the environment
	// as the README's first step sets them (nothing else: no CRM_DSN).
	dir := t.TempDir()
	example, err := os.ReadFile(filepath.Join("..", "..", "config.example.toml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "subsync.toml"), example, 0o600))
	creds := append([]string{"SUBSYNC_USER_ID=12345", "SUBSYNC_API_KEY=example-key"}, noXDG...)
	r := run(t, dir, creds, "config", "check")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "subsync.toml: OK")
	r = run(t, dir, noXDG, "config", "path")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, filepath.Join(dir, "subsync.toml")+"\n", r.stdout)

	// Without any configuration a command that keeps state exits 2 and creates nothing.
	empty := t.TempDir()
	for _, args := range [][]string{{"import", "x.csv", "--list", "1"}, {"runs"}, {"migrate"}} {
		r = run(t, empty, noXDG, args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", args, r.stderr)
	}
	require.Contains(t, r.stderr, "no configuration file found")
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing is created")

	// import --wait against an address nobody listens on fails fast, naming api.base_url,
	// and leaves nothing queued.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "subsync.toml"), []byte(`
[api]
base_url = "http://`+addr+`/api/public/v2"
user_id = "u"
[worker]
metrics_address = "off"
`), 0o600))
	csv := filepath.Join(work, "contacts.csv")
	require.NoError(t, os.WriteFile(csv, []byte("email\nada@example.com\n"), 0o600))
	env := append([]string{"SUBSYNC_API_KEY=" + key}, noXDG...)
	start := time.Now()
	r = run(t, work, env, "import", csv, "--list", "1", "--wait")
	require.NotEqual(t, cli.ExitOK, r.code)
	require.Less(t, time.Since(start), 35*time.Second)
	require.Contains(t, r.stderr, "api.base_url http://"+addr)
	require.Contains(t, r.stderr, "connection refused")
	r = run(t, work, env, "jobs", "ls", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var jobs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &jobs))
	require.Empty(t, jobs, "no job left queued")

	// A directory and an .xls are refused with exit 2, and no run is recorded.
	xls := filepath.Join(work, "old.xls")
	require.NoError(t, os.WriteFile(xls, []byte("x"), 0o600))
	for _, f := range []string{work, xls} {
		r = run(t, work, env, "import", f, "--list", "1")
		require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	}
	r = run(t, work, env, "runs", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &runs))
	require.Empty(t, runs)

	firstContactRejects(t, noXDG)
}

// firstContactRejects: a file with bad rows imports with rejects; the rejects export, fixed
// by a script as a person would in a spreadsheet, imports back with zero rejects; the same
// file with on_invalid = "drop" delivers the row with a bad phone number without it, and
// `runs ID` shows the warning.
func firstContactRejects(t *testing.T, noXDG []string) {
	srv, dir, env := emulator(t)
	env = append(env, noXDG...)
	conf := filepath.Join(dir, "subsync.toml")
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("[worker]\nmetrics_address = \"off\"\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	listID := srv.CreateList("First contact")
	list := fmt.Sprint(listID)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "contacts.csv"), []byte(
		"E-post,Fornavn,Mobil,Notat\n"+
			"ada@example.com,Ada,912 34 567,ok\n"+
			"not-an-email,Bob,+47 913 45 678,=fix me\n"+
			"eve@example.com,Eve,12345,x\n"), 0o600))

	importWait := func(file string, args ...string) (id int64, read, sent, rejected int64) {
		t.Helper()
		r := run(t, dir, env, append([]string{"import", file, "--list", list, "--wait", "--json"}, args...)...)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		var res struct {
			ID     int64 `json:"id"`
			Counts struct{ Read, Sent, Rejected int64 }
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
		return res.ID, res.Counts.Read, res.Counts.Sent, res.Counts.Rejected
	}
	id, read, sent, rejected := importWait("contacts.csv")
	require.Equal(t, [3]int64{3, 1, 2}, [3]int64{read, sent, rejected})

	r := run(t, dir, env, "runs", fmt.Sprint(id), "--rejects", "rejects.csv")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	data, err := os.ReadFile(filepath.Join(dir, "rejects.csv"))
	require.NoError(t, err)
	const bom = "\uFEFF" // for Excel, which reads a CSV file without it as Windows-1252
	require.True(t, bytes.HasPrefix(data, []byte(bom)), "the export starts with a byte-order mark")
	recs, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte(bom)))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"E-post", "Fornavn", "Mobil", "Notat",
		"subsync:kind", "subsync:line", "subsync:column", "subsync:code", "subsync:reason"}, recs[0])
	require.Len(t, recs, 3)
	require.Equal(t, []string{"not-an-email", "Bob", "'+47 913 45 678", "'=fix me", "rejected", "3", "E-post", "invalid_email"}, recs[1][:8],
		"the row whole, formula-safe")
	require.Equal(t, []string{"eve@example.com", "Eve", "12345", "x", "rejected", "4", "Mobil", "invalid_phone"}, recs[2][:8])

	// The fix, as a person makes it in a spreadsheet: by the code, the cell at fault.
	for _, rec := range recs[1:] {
		switch rec[7] {
		case "invalid_email":
			rec[0] = "bob@example.com"
		case "invalid_phone":
			rec[2] = "912 34 999"
		}
	}
	var fixed bytes.Buffer
	fixed.WriteString(bom) // saved as a spreadsheet saves "CSV UTF-8"
	w := csv.NewWriter(&fixed)
	require.NoError(t, w.WriteAll(recs))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixed.csv"), fixed.Bytes(), 0o600))
	_, read, sent, rejected = importWait("fixed.csv")
	require.Equal(t, [3]int64{2, 2, 0}, [3]int64{read, sent, rejected}, "the corrected export imports with zero rejects")
	bob, ok := srv.SubscriberByEmail("bob@example.com")
	require.True(t, ok)
	require.Equal(t, "+4791345678", bob.Fields["phone"], "the quote the export put before +47 is gone")
	eve, ok := srv.SubscriberByEmail("eve@example.com")
	require.True(t, ok)
	require.Equal(t, "+4791234999", eve.Fields["phone"])

	// A bad optional value need not lose the contact: with on_invalid = "drop" the row is
	// sent without it, and the run shows the warning.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "drop.toml"), []byte(`on_invalid = "drop"
[columns]
"E-post" = "email"
Fornavn = "firstname"
Mobil = "phone"
Notat = "ignore"
`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "late.csv"), []byte("E-post,Fornavn,Mobil,Notat\nmia@example.com,Mia,12345,x\n"), 0o600))
	_, read, sent, rejected = importWait("late.csv")
	require.Equal(t, [3]int64{1, 0, 1}, [3]int64{read, sent, rejected}, "rejected by default")
	id, read, sent, rejected = importWait("late.csv", "--mapping", "drop.toml")
	require.Equal(t, [3]int64{1, 1, 0}, [3]int64{read, sent, rejected}, "delivered under on_invalid = drop")
	mia, ok := srv.SubscriberByEmail("mia@example.com")
	require.True(t, ok)
	require.Equal(t, "Mia", mia.Fields["firstname"])
	require.Empty(t, mia.Fields["phone"])
	r = run(t, dir, env, "runs", fmt.Sprint(id))
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "1 (invalid_phone 1), values dropped from rows that were sent")
	require.Contains(t, r.stdout, `line 2 column "Mobil": invalid_phone: the phone number has 5 digits`)
	r = run(t, dir, env, "runs", fmt.Sprint(id), "--rejects", "-")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "mia@example.com,Mia,12345,x,warning,2,Mobil,invalid_phone,")
}
