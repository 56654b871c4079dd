package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// progressLogEvery spaces progress log lines when stderr is not a terminal.
const progressLogEvery = 10 * time.Second

// progressDrawEvery spaces the redraws of the progress line on a terminal.
const progressDrawEvery = 200 * time.Millisecond

// rateWindow is how far back the rate shown on a terminal looks.
const rateWindow = 5 * time.Second

// progress shows how a waited-for run goes: a line redrawn in place on a terminal, otherwise
// a log line when the state changes and at most every progressLogEvery. It counts what the run
// counts (rows of an import or a sync, changes of a status pull, people of an erasure) and
// their rate; bytes only while no row is counted yet, labelled as bytes. When the run ends the
// line says so in words: "completed: 60000 rows in 12s", "cancelled at 12000 of 60000 rows".
type progress struct {
	a        *app
	ctx      context.Context
	terminal bool
	state    string
	logged   time.Time
	drawn    time.Time
	started  time.Time // when the run was first seen started
	now      func() time.Time
	last     jobs.Progress // the latest report
	samples  []rateSample  // recent (time, rows) pairs for the rate
	shown    bool          // a line is drawn on the terminal
}

type rateSample struct {
	at   time.Time
	rows int64
}

// unit is what a run of kind counts, in the plural.
func unit(kind string) string {
	switch kind {
	case state.KindStatusPull:
		return "changes"
	case state.KindForget:
		return "people"
	}
	return "rows"
}

// attrs are a progress log line's: totals only when known (a CSV's row count is not known
// before it is read, its size is), with the rate and the time left once they can be told.
func (p *progress) attrs(pr jobs.Progress) []slog.Attr {
	attrs := []slog.Attr{slog.Int64("job_id", pr.JobID), slog.Int64("run_id", pr.RunID), slog.String("state", pr.State),
		slog.Int64("rows", pr.Rows)}
	if pr.TotalRows > 0 {
		attrs = append(attrs, slog.Int64("total_rows", pr.TotalRows))
	}
	if pr.TotalBytes > 0 {
		attrs = append(attrs, slog.Int64("bytes", pr.Bytes), slog.Int64("total_bytes", pr.TotalBytes))
	}
	if pr.Kind == "" || pr.Kind == state.KindImport || pr.Kind == state.KindSync {
		attrs = append(attrs, slog.Int64("sent", pr.Counts.Sent), slog.Int64("rejected", pr.Counts.Rejected))
	}
	elapsed := p.now().Sub(p.started)
	if p.started.IsZero() || elapsed <= 0 || pr.Rows == 0 {
		return attrs
	}
	attrs = append(attrs, slog.Int64("rows_per_second", int64(float64(pr.Rows)/elapsed.Seconds())))
	if left, ok := timeLeft(pr, elapsed); ok {
		attrs = append(attrs, slog.Duration("eta", left.Round(time.Second)))
	}
	return attrs
}

// fraction is how much of the run is done, by rows when their total is known, else by bytes;
// ok is false when neither total is known.
func fraction(pr jobs.Progress) (float64, bool) {
	switch {
	case pr.TotalRows > 0:
		return min(float64(pr.Rows)/float64(pr.TotalRows), 1), true
	case pr.TotalBytes > 0:
		return min(float64(pr.Bytes)/float64(pr.TotalBytes), 1), true
	}
	return 0, false
}

// timeLeft estimates the time left of a running run from the fraction done in elapsed.
func timeLeft(pr jobs.Progress, elapsed time.Duration) (time.Duration, bool) {
	f, ok := fraction(pr)
	if !ok || f <= 0 || f >= 1 || pr.State != string(state.RunRunning) {
		return 0, false
	}
	return time.Duration(float64(elapsed) * (1 - f) / f), true
}

func (a *app) newProgress(ctx context.Context) *progress {
	return &progress{a: a, ctx: ctx, terminal: a.term != nil, now: time.Now}
}

func (p *progress) update(pr jobs.Progress) {
	now := p.now()
	if pr.RunID != 0 && p.started.IsZero() {
		p.started = now
	}
	if pr.RunID != 0 {
		p.last = pr
		p.samples = append(p.samples, rateSample{now, pr.Rows})
		for len(p.samples) > 2 && now.Sub(p.samples[1].at) >= rateWindow {
			p.samples = p.samples[1:]
		}
	}
	if !p.terminal {
		if pr.State != p.state || now.Sub(p.logged) >= progressLogEvery {
			p.state, p.logged = pr.State, now
			p.a.log.LogAttrs(p.ctx, slog.LevelInfo, "progress", p.attrs(pr)...)
		}
		return
	}
	if pr.RunID == 0 {
		return // queued: nothing to measure yet
	}
	if p.shown && now.Sub(p.drawn) < progressDrawEvery && pr.State == p.state {
		return
	}
	p.state, p.drawn = pr.State, now
	p.draw(p.line(pr))
}

// rate is the rows per second over the recent window (since the start until the window fills).
func (p *progress) rate() (float64, bool) {
	if len(p.samples) < 2 {
		return 0, false
	}
	first, last := p.samples[0], p.samples[len(p.samples)-1]
	d := last.at.Sub(first.at)
	if d <= 0 {
		return 0, false
	}
	return float64(last.rows-first.rows) / d.Seconds(), true
}

// line is the progress line of a running run:
//
//	[=========>          ] 45%  27000 of 60000 rows  5400 rows/s  5s left  running: 26900 sent, 100 rejected
func (p *progress) line(pr jobs.Progress) string {
	var b strings.Builder
	u := unit(pr.Kind)
	if f, ok := fraction(pr); ok {
		const width = 20
		full := int(f * width)
		b.WriteString("[" + strings.Repeat("=", full))
		if full < width {
			b.WriteString(">" + strings.Repeat(" ", width-full-1))
		}
		fmt.Fprintf(&b, "] %3.0f%%  ", f*100)
	}
	switch {
	case pr.Rows == 0 && pr.Bytes > 0 && pr.TotalBytes > 0:
		fmt.Fprintf(&b, "%s of %s read", formatBytes(pr.Bytes), formatBytes(pr.TotalBytes))
	case pr.Rows == 0 && pr.Bytes > 0:
		fmt.Fprintf(&b, "%s read", formatBytes(pr.Bytes))
	case pr.TotalRows > 0:
		fmt.Fprintf(&b, "%d of %d %s", pr.Rows, pr.TotalRows, u)
	default:
		fmt.Fprintf(&b, "%d %s", pr.Rows, u)
	}
	if r, ok := p.rate(); ok && pr.Rows > 0 {
		fmt.Fprintf(&b, "  %s %s/s", formatRate(r), u)
	}
	if left, ok := timeLeft(pr, p.now().Sub(p.started)); ok {
		fmt.Fprintf(&b, "  %s left", left.Round(time.Second))
	}
	fmt.Fprintf(&b, "  %s", pr.State)
	if d := p.doing(pr); d != "" {
		b.WriteString(": " + d)
	}
	return b.String()
}

// doing is what the run did so far, in the words of its kind.
func (p *progress) doing(pr jobs.Progress) string {
	if pr.Kind == "" || pr.Kind == state.KindImport || pr.Kind == state.KindSync {
		s := fmt.Sprintf("%d sent, %d rejected", pr.Counts.Sent, pr.Counts.Rejected)
		if pr.Counts.Filtered > 0 {
			s += fmt.Sprintf(", %d filtered (where)", pr.Counts.Filtered)
		}
		return s
	}
	return jobs.DescribeRun(state.Run{Kind: pr.Kind, Name: pr.Name, Counts: pr.Counts}).Summary()
}

// final is the line of a run that ended: how far it came, in words.
func (p *progress) final(pr jobs.Progress) string {
	u := unit(pr.Kind)
	var at string
	switch {
	case pr.TotalRows > 0:
		at = fmt.Sprintf("%d of %d %s", pr.Rows, pr.TotalRows, u)
	case pr.Rows == 0 && pr.Bytes > 0 && pr.TotalBytes > 0:
		at = fmt.Sprintf("%s of %s", formatBytes(pr.Bytes), formatBytes(pr.TotalBytes))
	case pr.TotalBytes > 0 && pr.Bytes < pr.TotalBytes:
		at = fmt.Sprintf("%d %s (%.0f%% of the file)", pr.Rows, u, 100*float64(pr.Bytes)/float64(pr.TotalBytes))
	default:
		at = fmt.Sprintf("%d %s", pr.Rows, u)
	}
	var b strings.Builder
	switch state.RunState(pr.State) {
	case state.RunCompleted:
		elapsed := p.now().Sub(p.started)
		fmt.Fprintf(&b, "completed: %d %s in %s", pr.Rows, u, elapsed.Round(100*time.Millisecond))
		if s := elapsed.Seconds(); s > 0 && pr.Rows > 0 {
			fmt.Fprintf(&b, " (%s %s/s)", formatRate(float64(pr.Rows)/s), u)
		}
	default:
		fmt.Fprintf(&b, "%s at %s", pr.State, at)
	}
	if d := p.doing(pr); d != "" {
		b.WriteString(": " + d)
	}
	return b.String()
}

func (p *progress) draw(line string) {
	w := p.a.term.bar()
	fmt.Fprint(w, eraseLine+line)
	p.shown = true
}

// done ends the display: on a terminal, the last line says how the run ended.
func (p *progress) done() {
	if !p.terminal || p.last.RunID == 0 {
		return
	}
	p.draw(p.final(p.last))
	fmt.Fprintln(p.a.term.bar())
}

// formatRate shows a rate with a precision that fits its size.
func formatRate(r float64) string {
	if r < 10 {
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.0f", r)
}

// formatBytes shows a byte count in B, kB, MB or GB (powers of 1000).
func formatBytes(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000_000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1000_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}
