package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/subsync/subsync/jobs"
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
}

func (a *app) newProgress(ctx context.Context) *progress {
	return &progress{a: a, ctx: ctx, terminal: a.isTerminal(a.stderr)}
}

func (p *progress) update(pr jobs.Progress) {
	if !p.terminal {
		if pr.State != p.state || time.Since(p.logged) >= progressLogEvery {
			p.state, p.logged = pr.State, time.Now()
			p.a.log.InfoContext(p.ctx, "progress", slog.Int64("job_id", pr.JobID), slog.Int64("run_id", pr.RunID), slog.String("state", pr.State),
				slog.Int64("rows", pr.Rows), slog.Int64("total_rows", pr.TotalRows), slog.Int64("bytes", pr.Bytes), slog.Int64("total_bytes", pr.TotalBytes),
				slog.Int64("sent", pr.Counts.Sent), slog.Int64("rejected", pr.Counts.Rejected))
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
		progressbar.OptionSetWriter(p.a.stderr),
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
		fmt.Fprintln(p.a.stderr)
	}
}
