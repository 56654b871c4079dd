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
	p := a.newProgress(context.Background())
	p.update(jobs.Progress{RunID: 1, State: "running", TotalRows: 1000, Rows: 10})
	a.log.Info("first line", slog.Int("n", 1))
	a.log.Info("second line")
	lines := screen(term.Bytes())
	require.Len(t, lines, 3, "%q", lines)
	require.Regexp(t, `^time=\S+ level=INFO msg="first line" n=1$`, lines[0])
	require.Regexp(t, `^time=\S+ level=INFO msg="second line"$`, lines[1])
	// The bar, drawn again below the log lines: rows, rows per second (or hour) and the ETA
	// ([elapsed:left]).
	require.Regexp(t, `\(\d+/1000, \d+ rows/(s|min|hr)\) \[\d+s:\d+s\] running: 0 sent`, lines[2])

	p.done()
	lines = screen(term.Bytes())
	require.Len(t, lines, 4, "%q", lines)
	require.Contains(t, lines[2], "(1000/1000", "the finished bar keeps its line")
	require.Empty(t, lines[3], "what follows starts on a line of its own")
	a.log.Info("after")
	require.Regexp(t, `^time=\S+ level=INFO msg=after$`, screen(term.Bytes())[3])
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
