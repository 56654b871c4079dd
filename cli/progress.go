package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// progressLogEvery spaces progress log lines when stderr is not a terminal.
const progressLogEvery = 10 * time.Second

// progress shows how a waited-for run goes: a progress bar on a terminal, otherwise a log
// line when the state changes and at most every progressLogEvery.
type progress struct {
	a        *app
	ctx      context.Context
	terminal bool
	bar      *progressbar.ProgressBar
	bytes    bool // the bar counts bytes (the row total is unknown)
	spinner  bool // neither total is known
	state    string
	logged   time.Time
	started  time.Time // when the run was first seen started
	now      func() time.Time
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
	attrs = append(attrs, slog.Int64("sent", pr.Counts.Sent), slog.Int64("rejected", pr.Counts.Rejected))
	elapsed := p.now().Sub(p.started)
	if p.started.IsZero() || elapsed <= 0 || pr.Rows == 0 {
		return attrs
	}
	attrs = append(attrs, slog.Int64("rows_per_second", int64(float64(pr.Rows)/elapsed.Seconds())))
	done, total := pr.Rows, pr.TotalRows
	if total == 0 {
		done, total = pr.Bytes, pr.TotalBytes
	}
	if total > 0 && done > 0 && done <= total && pr.State == string(state.RunRunning) {
		left := time.Duration(float64(elapsed) * float64(total-done) / float64(done))
		attrs = append(attrs, slog.Duration("eta", left.Round(time.Second)))
	}
	return attrs
}

func (a *app) newProgress(ctx context.Context) *progress {
	return &progress{a: a, ctx: ctx, terminal: a.term != nil, now: time.Now}
}

func (p *progress) update(pr jobs.Progress) {
	if pr.RunID != 0 && p.started.IsZero() {
		p.started = p.now()
	}
	if !p.terminal {
		if pr.State != p.state || p.now().Sub(p.logged) >= progressLogEvery {
			p.state, p.logged = pr.State, p.now()
			p.a.log.LogAttrs(p.ctx, slog.LevelInfo, "progress", p.attrs(pr)...)
		}
		return
	}
	if pr.RunID == 0 {
		return // queued: nothing to measure yet
	}
	if p.bar == nil {
		p.bar = p.newBar(pr)
	} else if p.spinner && (pr.TotalRows > 0 || pr.TotalBytes > 0) {
		// The totals became known after the run started: a bar instead of the spinner.
		_ = p.bar.Exit()
		p.bar = p.newBar(pr)
	}
	p.bar.Describe(fmt.Sprintf("%s: %d sent, %d rejected", pr.State, pr.Counts.Sent, pr.Counts.Rejected))
	switch {
	case p.bytes:
		_ = p.bar.Set64(pr.Bytes)
	default:
		_ = p.bar.Set64(pr.Rows)
	}
}

func (p *progress) newBar(pr jobs.Progress) *progressbar.ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.a.term.bar()), // log lines are written around it, never over it
		progressbar.OptionThrottle(200 * time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionShowIts(),            // rows/s (bytes/s when counting bytes)
		progressbar.OptionSetPredictTime(true), // ETA
	}
	switch {
	case pr.TotalRows > 0:
		p.spinner, p.bytes = false, false
		return progressbar.NewOptions64(pr.TotalRows, append(opts, progressbar.OptionShowCount(), progressbar.OptionSetItsString("rows"))...)
	case pr.TotalBytes > 0:
		p.spinner, p.bytes = false, true
		return progressbar.NewOptions64(pr.TotalBytes, append(opts, progressbar.OptionShowBytes(true))...)
	}
	p.spinner = true
	return progressbar.NewOptions64(-1, append(opts, progressbar.OptionShowCount(), progressbar.OptionSetItsString("rows"))...)
}

func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.a.term.bar())
	}
}
