package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
)

// demoWant is what the demo must report, derived from the generated sample.
type demoWant struct {
	csvRows, csvBad, csvDups int64
	csvCodes                 map[string]int
	xlsxRows, xlsxBad        int64
	xlsxCodes                map[string]int
	suppressed               int64 // unsubscribed + bounced
}

func wantDemo(t *testing.T) demoWant {
	t.Helper()
	s := newDemoSample(demoSeed)
	w := demoWant{csvCodes: map[string]int{}, xlsxCodes: map[string]int{},
		csvRows: int64(len(s.CSV)), xlsxRows: int64(len(s.XLSX)), suppressed: int64(len(s.Unsubscribe) + len(s.Bounce))}
	for _, c := range s.CSV {
		switch {
		case c.Bad != "":
			w.csvBad++
			w.csvCodes[c.Bad]++
		case c.Dup:
			w.csvDups++
		}
	}
	for _, c := range s.XLSX {
		if c.Bad != "" {
			w.xlsxBad++
			w.xlsxCodes[c.Bad]++
		}
	}
	// The sample shows every kind of problem the issue asks for.
	require.Equal(t, 3, w.csvCodes[mapping.CodeInvalidEmail])
	require.Equal(t, 1, w.csvCodes[mapping.CodeInvalidDate])
	require.Equal(t, 1, w.csvCodes[mapping.CodeInvalidPhone])
	require.Equal(t, int64(1), w.csvDups)
	require.Positive(t, w.suppressed)
	return w
}

func TestDemoSampleIsDeterministic(t *testing.T) {
	t.Parallel()
	a, b := newDemoSample(demoSeed), newDemoSample(demoSeed)
	require.Equal(t, a, b)

	// Suppressed people are good rows that appear once; addresses are otherwise unique.
	seen := map[string]int{}
	for _, c := range append(append([]demoContact{}, a.CSV...), a.XLSX...) {
		if c.Bad == "" {
			seen[strings.ToLower(c.Email)]++
		}
	}
	dups := 0
	for _, n := range seen {
		if n > 1 {
			dups += n - 1
		}
	}
	require.Equal(t, 1, dups, "only the planted duplicate repeats an address")
	for _, e := range append(append([]string{}, a.Unsubscribe...), a.Bounce...) {
		require.Equal(t, 1, seen[e], "suppressed %s", e)
	}
	require.Len(t, a.Unsubscribe, demoUnsubscribe)
	require.Len(t, a.Bounce, demoBounce)
	// Those who leave the CRM and the one who moves are good rows, none of them suppressed.
	require.Len(t, a.Leave, demoLeave)
	require.NotEmpty(t, a.Move)
	for _, e := range append(slices.Clone(a.Leave), a.Move) {
		require.Equal(t, 1, seen[e], e)
		require.NotContains(t, append(slices.Clone(a.Unsubscribe), a.Bounce...), e)
	}
	require.Zero(t, seen[a.MovedTo])
	require.Len(t, a.changedCSV(), len(a.CSV)-demoLeave)
}

func TestDemoJSONKeep(t *testing.T) {
	t.Parallel()
	w := wantDemo(t)
	var out, errb bytes.Buffer
	start := time.Now()
	code := Main(context.Background(), []string{"demo", "--json", "--keep"}, strings.NewReader(""), &out, &errb)
	require.Equal(t, ExitOK, code, errb.String())
	require.Less(t, time.Since(start), 30*time.Second)
	res := decode[demoResult](t, out.String())
	require.NotEmpty(t, res.Dir)
	t.Cleanup(func() { os.RemoveAll(res.Dir) })

	require.Len(t, res.Runs, 5)
	for _, r := range res.Runs {
		require.Equal(t, "completed", r.Run.State, r.Step)
	}
	imp, xlsx, pull, sync, resync := res.Runs[0], res.Runs[1], res.Runs[2], res.Runs[3], res.Runs[4]

	// The CSV import: every row read; bad rows rejected with their codes; the duplicate left out.
	require.Equal(t, countsJSON{Read: w.csvRows, Sent: w.csvRows - w.csvBad - w.csvDups, Rejected: w.csvBad,
		Duplicates: w.csvDups, Batches: 1, Requests: 1}, *imp.Run.Counts) // under 1000 rows: one bulkinsert
	require.Equal(t, w.csvCodes, imp.Rejects)
	// The workbook, below its title row.
	require.Equal(t, w.xlsxRows, xlsx.Run.Counts.Read)
	require.Equal(t, w.xlsxRows-w.xlsxBad, xlsx.Run.Counts.Sent)
	require.Equal(t, w.xlsxCodes, xlsx.Rejects)
	// The status pull records every change the service made.
	require.Equal(t, "status_pull", pull.Run.Kind)
	require.Equal(t, w.suppressed, pull.Run.Changes["read"])
	require.Zero(t, pull.Run.Changes["already_known"])
	// The sync of the same file: the people who left suppressed, the rest unchanged, nothing sent.
	require.Equal(t, countsJSON{Read: w.csvRows, Rejected: w.csvBad, Duplicates: w.csvDups, Suppressed: w.suppressed,
		Unchanged: w.csvRows - w.csvBad - w.csvDups - w.suppressed}, *sync.Run.Counts)
	require.Equal(t, w.csvCodes, sync.Rejects)
	// The CRM changed: the new address sent; the old one and those who left unsubscribed.
	require.Equal(t, countsJSON{Read: w.csvRows - demoLeave, Sent: 1, Rejected: w.csvBad, Duplicates: w.csvDups,
		Suppressed: w.suppressed, Unchanged: w.csvRows - demoLeave - w.csvBad - w.csvDups - w.suppressed - 1,
		Batches: 1, Requests: 2, Removed: demoLeave + 1}, *resync.Run.Counts)

	// The service holds each good address once, with the statuses it was given.
	news := w.csvRows - w.csvBad - w.csvDups
	require.Equal(t, []demoList{
		{ID: 1, Title: demoNewsList, Subscribers: int(news + 1), Active: int(news - w.suppressed - demoLeave),
			Unsubscribed: demoUnsubscribe + demoLeave + 1, Bounced: demoBounce},
		{ID: 2, Title: demoClubList, Subscribers: int(w.xlsxRows - w.xlsxBad), Active: int(w.xlsxRows - w.xlsxBad)},
	}, res.Lists)

	// The kept directory: the sample files, and a configuration that reads the run history.
	for _, f := range []string{demoCSVFile, demoXLSXFile, demoConfig, "subsync.db"} {
		require.FileExists(t, filepath.Join(res.Dir, f))
	}
	h := &harness{t: t, dir: res.Dir, env: map[string]string{}, config: filepath.Join(res.Dir, demoConfig)}
	runs := decode[[]runJSON](t, h.ok("runs", "--json"))
	require.Len(t, runs, 5)
	rejects := h.ok("runs", strconv.FormatInt(imp.Run.ID, 10), "--rejects", "-")
	require.Equal(t, int(w.csvBad)+1, strings.Count(rejects, "\n"), rejects) // with the header line
}

func TestDemoText(t *testing.T) {
	t.Parallel()
	w := wantDemo(t)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"demo"}, strings.NewReader(""), &out, &errb)
	require.Equal(t, ExitOK, code, errb.String())
	text := out.String()

	// The temporary directory named on the first line is gone.
	first, _, _ := strings.Cut(text, "\n")
	_, dir, ok := strings.Cut(first, "the job queue in ")
	require.True(t, ok, first)
	require.NoDirExists(t, dir)

	// The summary table, by step: read, sent, rejected, duplicates, suppressed, unchanged.
	rows := map[string][]string{}
	inTable := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "RUN" && f[1] == "STEP":
			inTable = true
		case inTable && len(f) == 0:
			inTable = false
		case inTable:
			require.Len(t, f, 12, line)
			rows[f[1]+" "+f[2]] = f[4:11]
		}
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	require.Equal(t, map[string][]string{
		"import " + demoCSVFile:  {n(w.csvRows), n(w.csvRows - w.csvBad - w.csvDups), n(w.csvBad), n(w.csvDups), "0", "0", "0"},
		"import " + demoXLSXFile: {n(w.xlsxRows), n(w.xlsxRows - w.xlsxBad), n(w.xlsxBad), "0", "0", "0", "0"},
		"status pull":            {n(w.suppressed), "-", "-", "0", "-", "-", "-"},
		"sync " + demoSyncName: {n(w.csvRows), "0", n(w.csvBad), n(w.csvDups), n(w.suppressed),
			n(w.csvRows - w.csvBad - w.csvDups - w.suppressed), "0"},
		"resync " + demoSyncName: {n(w.csvRows - demoLeave), "1", n(w.csvBad), n(w.csvDups), n(w.suppressed),
			n(w.csvRows - demoLeave - w.csvBad - w.csvDups - w.suppressed - 1), n(demoLeave + 1)},
	}, rows)
	require.Contains(t, text, "sync \""+demoSyncName+"\" again")

	// Rejects grouped by code, with the first row of each; the sync's are the import's.
	for code, k := range w.csvCodes {
		require.Regexp(t, `(?m)^1\s+`+code+`\s+`+strconv.Itoa(k)+`\s+line \d+, `, text)
	}
	require.Regexp(t, `(?m)^4\s+-\s+`+n(w.csvBad)+`\s+the same rows as run 1$`, text)
	require.Contains(t, text, "Try next:")
	require.Contains(t, text, "subsync preview")
	require.Contains(t, text, "config.example.toml")
	require.Contains(t, text, "cmd/subsim")
	// Not a terminal: progress is logged on stderr, not drawn.
	require.Contains(t, errb.String(), `"msg":"progress"`)
}
