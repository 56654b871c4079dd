package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// Live pages. A page that shows a run under way is sent with main[data-live] (how often to
// look again, in milliseconds) and its changing parts marked [data-live-part] with an id.
// static/live.js (the pages' one script, served from /static, allowed by the CSP) fetches the
// page again at that pace and swaps each part for the new one, until the page comes back
// without data-live: the run ended, and its parts show the outcome. No build step, no
// framework: short polling of the page itself, so what it shows is what the server renders.
const (
	// LiveEvery is how often a page with a run under way looks again.
	LiveEvery = time.Second
	// IdleEvery is how often the runs list looks for new runs while none runs.
	IdleEvery = 5 * time.Second
)

func liveMillis(d time.Duration) int { return int(d / time.Millisecond) }

// runProgress is how far a run under way has come, as its page and the runs list show it:
// rows done (at the last checkpoint), of how many when known (else by the file's bytes), the
// rate since it started, the time left.
type runProgress struct {
	Done    int64
	Total   int64 // 0: unknown
	Percent int   // -1: unknown
	Max     int64 // the progress bar's max and value (rows, or bytes)
	Value   int64
	Rate    string // "5400 rows/s", "" until it can be told
	Left    string // "about 12s left", "" until it can be told
}

// progressOf tells how far a run has come at now; nil for a run that ended or that counts no
// rows (a status pull counts changes in one go).
func progressOf(r state.Run, now time.Time) *runProgress {
	if r.State.Final() || jobs.DescribeRun(r).Object != "counts" {
		return nil
	}
	p := &runProgress{Done: r.Counts.Read, Total: r.TotalRows, Percent: -1}
	var f float64
	switch {
	case r.TotalRows > 0:
		p.Max, p.Value = r.TotalRows, min(r.Counts.Read, r.TotalRows)
		f = float64(p.Value) / float64(p.Max)
	case r.TotalBytes > 0 && r.BytesDone < r.TotalBytes:
		// A file's bytes are read ahead of the rows done: once all are read, the share of the
		// rows done is not known (the bar goes indeterminate) until the run ends.
		p.Max, p.Value = r.TotalBytes, r.BytesDone
		f = float64(p.Value) / float64(p.Max)
	}
	if p.Max > 0 {
		p.Percent = min(int(f*100), 99) // a run under way is not done

	}
	if r.StartedAt.IsZero() || r.Counts.Read == 0 {
		return p
	}
	elapsed := r.UpdatedAt.Sub(r.StartedAt)
	if r.State == state.RunRunning {
		elapsed = now.Sub(r.StartedAt)
	}
	if elapsed <= 0 {
		return p
	}
	p.Rate = strconv.FormatInt(int64(float64(r.Counts.Read)/elapsed.Seconds()), 10) + " rows/s"
	if f > 0 && f < 1 && r.State == state.RunRunning {
		left := time.Duration(float64(elapsed) * (1 - f) / f)
		p.Left = "about " + formatDuration(max(left, time.Second)) + " left"
	}
	return p
}

// job is a queued job's page (/jobs/ID): the run's page once a worker started it, else the
// job waiting, which follows it live until it starts. The pages' actions (an import, an
// erasure) open it for the job they queued.
func (s *Server) job(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	run, err := s.b.State().RunByJob(r.Context(), id)
	switch {
	case err == nil:
		s.showRun(w, r, run)
		return
	case !errors.Is(err, state.ErrNotFound):
		s.fail(w, r, err)
		return
	}
	queued, err := s.b.Jobs(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, j := range queued {
		if j.ID == id {
			s.renderLive(w, r, "job", fmt.Sprintf("Job %d", id), jobData{JobInfo: j, Already: already(r)}, LiveEvery)
			return
		}
	}
	// It may have started (and ended) meanwhile.
	if run, err := s.b.State().RunByJob(r.Context(), id); err == nil {
		s.showRun(w, r, run)
		return
	}
	// Neither queued nor run: it ended without a run (cancelled while queued) or never was.
	http.NotFound(w, r)
}

// jobData is a queued job's page.
type jobData struct {
	jobs.JobInfo
	Already bool // an action found it queued or running already
}

// already reports whether an action that opened the page found its job queued or running
// already (?already=1).
func already(r *http.Request) bool { return r.URL.Query().Get("already") == "1" }
