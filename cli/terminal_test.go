package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// screen plays terminal output as a terminal shows it: a carriage return goes back to the
// start of the line, ESC [ K erases to its end, a newline starts the next line, and any other
// byte overwrites the one under the cursor.
func screen(out []byte) []string {
	lines := [][]rune{nil}
	col := 0
	s := []rune(string(out))
	for i := 0; i < len(s); i++ {
		cur := &lines[len(lines)-1]
		switch {
		case s[i] == '\r':
			col = 0
		case s[i] == '\n':
			lines = append(lines, nil)
			col = 0
		case s[i] == '\x1b' && i+2 < len(s) && s[i+1] == '[' && s[i+2] == 'K':
			*cur = (*cur)[:min(col, len(*cur))]
			i += 2
		default:
			for len(*cur) <= col {
				*cur = append(*cur, ' ')
			}
			(*cur)[col] = s[i]
			col++
		}
	}
	text := make([]string, len(lines))
	for i, l := range lines {
		text[i] = strings.TrimRight(string(l), " ")
	}
	return text
}

// TestLogLinesNeverDrawnOverTheBar: on a terminal, a log line written while the progress bar
// is drawn takes a line of its own, and the bar is drawn again below it.
func TestLogLinesNeverDrawnOverTheBar(t *testing.T) {
	t.Parallel()
	var term bytes.Buffer // a fake terminal: what was written, played by screen
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &term)
	a.isTerminal = func(v any) bool { return v == a.stderr }
	a.logFormat, a.logLevel = logAuto, "info"
	require.NoError(t, a.setup(nil, nil)) // the logger writes to the terminal through a.term
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := a.newProgress(context.Background())
	p.now = func() time.Time { return now }
	p.update(jobs.Progress{RunID: 1, Kind: "import", State: "running", TotalRows: 1000})
	now = now.Add(time.Second)
	p.update(jobs.Progress{RunID: 1, Kind: "import", State: "running", TotalRows: 1000, Rows: 100, Counts: state.Counts{Sent: 90}})
	a.log.Info("first line", slog.Int("n", 1))
	a.log.Info("second line")
	lines := screen(term.Bytes())
	require.Len(t, lines, 3, "%q", lines)
	require.Regexp(t, `^time=\S+ level=INFO msg="first line" n=1$`, lines[0])
	require.Regexp(t, `^time=\S+ level=INFO msg="second line"$`, lines[1])
	// The bar, drawn again below the log lines: rows, rows per second and the time left.
	require.Equal(t, "[==>                 ]  10%  100 of 1000 rows  100 rows/s  9s left  running: 90 sent, 0 rejected", lines[2])

	now = now.Add(9 * time.Second)
	p.update(jobs.Progress{RunID: 1, Kind: "import", State: "completed", TotalRows: 1000, Rows: 1000, Counts: state.Counts{Sent: 990, Rejected: 10}})
	p.done()
	lines = screen(term.Bytes())
	require.Len(t, lines, 4, "%q", lines)
	require.Equal(t, "completed: 1000 rows in 10s (100 rows/s): 990 sent, 10 rejected", lines[2], "the last line keeps its place")
	// Rows a where expression left out are told too.
	require.Equal(t, "2 sent, 0 rejected, 2 filtered (where)",
		p.doing(jobs.Progress{Kind: "import", Counts: state.Counts{Sent: 2, Filtered: 2}}))
	require.Empty(t, lines[3], "what follows starts on a line of its own")
	a.log.Info("after")
	require.Regexp(t, `^time=\S+ level=INFO msg=after$`, screen(term.Bytes())[3])
}

// TestProgressCountsRowsNotBytes: a CSV's size is known before its row count: the bar fills
// by bytes, but the line counts rows and rows per second, never bytes as rows; a run
// cancelled on the way says where it stopped, not 100%.
func TestProgressCountsRowsNotBytes(t *testing.T) {
	t.Parallel()
	var term bytes.Buffer
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &term)
	a.isTerminal = func(v any) bool { return v == a.stderr }
	a.logFormat, a.logLevel = logAuto, "info"
	require.NoError(t, a.setup(nil, nil))
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := a.newProgress(context.Background())
	p.now = func() time.Time { return now }
	const size = 700_283_113
	p.update(jobs.Progress{RunID: 2, Kind: "import", State: "running", TotalBytes: size})
	require.Equal(t, "[>                   ]   0%  0 rows  running: 0 sent, 0 rejected", screen(term.Bytes())[0])
	now = now.Add(2 * time.Second)
	p.update(jobs.Progress{RunID: 2, Kind: "import", State: "running", Rows: 12_000, Bytes: size / 5, TotalBytes: size,
		Counts: state.Counts{Sent: 12_000}})
	line := screen(term.Bytes())[0]
	require.Equal(t, "[===>                ]  20%  12000 rows  6000 rows/s  8s left  running: 12000 sent, 0 rejected", line)
	require.NotContains(t, line, "700283113")

	now = now.Add(time.Second)
	p.update(jobs.Progress{RunID: 2, Kind: "import", State: "cancelled", Rows: 12_000, Bytes: size / 5, TotalBytes: size,
		Counts: state.Counts{Sent: 12_000}})
	p.done()
	lines := screen(term.Bytes())
	require.Equal(t, "cancelled at 12000 rows (20% of the file): 12000 sent, 0 rejected", lines[0])
	require.NotContains(t, strings.Join(lines, "\n"), "100%")

	// With the row count known: "cancelled at N of M".
	term.Reset()
	p = a.newProgress(context.Background())
	p.now = func() time.Time { return now }
	p.update(jobs.Progress{RunID: 3, Kind: "sync", State: "running", TotalRows: 60_000})
	p.update(jobs.Progress{RunID: 3, Kind: "sync", State: "cancelled", Rows: 12_000, TotalRows: 60_000})
	p.done()
	require.Equal(t, "cancelled at 12000 of 60000 rows: 0 sent, 0 rejected", screen(term.Bytes())[0])

	// A status pull counts changes in its own words.
	term.Reset()
	p = a.newProgress(context.Background())
	p.now = func() time.Time { return now }
	p.update(jobs.Progress{RunID: 4, Kind: "status_pull", Name: "status", State: "running"})
	now = now.Add(time.Second)
	p.update(jobs.Progress{RunID: 4, Kind: "status_pull", Name: "status", State: "completed", Rows: 148,
		Counts: state.Counts{Read: 148, Duplicates: 140, Sent: 8, Requests: 2}})
	p.done()
	require.Equal(t, "completed: 148 changes in 1s (148 changes/s): 148 changes read, 8 recorded, 8 written back", screen(term.Bytes())[0])
}

// TestProgressLinesCarryRealTotals: off a terminal, progress is a JSON log line with the
// totals that are known (a CSV's size; its row count is not known until it is read), the
// rate and the time left as a duration people read.
func TestProgressLinesCarryRealTotals(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &logs)
	a.isTerminal = func(any) bool { return false }
	a.logFormat, a.logLevel = logAuto, "info"
	require.NoError(t, a.setup(nil, nil))
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := a.newProgress(context.Background())
	p.now = func() time.Time { return now }
	p.update(jobs.Progress{JobID: 7, State: "queued"})
	p.update(jobs.Progress{JobID: 7, RunID: 3, State: "running", TotalBytes: 4000})
	now = now.Add(progressLogEvery)
	p.update(jobs.Progress{JobID: 7, RunID: 3, State: "running", Rows: 500, Bytes: 1000, TotalBytes: 4000})
	now = now.Add(progressLogEvery)
	p.update(jobs.Progress{JobID: 7, RunID: 3, State: "completed", Rows: 2000, Bytes: 4000, TotalBytes: 4000, TotalRows: 2000})
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	require.Len(t, lines, 4)
	require.NotContains(t, lines[0], "total_rows", "nothing known yet: no made-up total")
	require.NotContains(t, lines[0], "total_bytes")
	require.NotContains(t, lines[1], "total_rows", "a CSV's row count is not known")
	require.EqualValues(t, 4000, lines[1]["total_bytes"])
	require.EqualValues(t, 50, lines[2]["rows_per_second"])
	require.Equal(t, "30s", lines[2]["eta"], "a quarter of the bytes in 10 s: 30 s left")
	require.EqualValues(t, 2000, lines[3]["total_rows"])
	require.NotContains(t, lines[3], "eta", "a run that ended has no time left")
}
