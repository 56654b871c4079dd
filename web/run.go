package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// Page sizes of a run's page.
const (
	// RejectsPerPage is how many rejects a run page lists at a time.
	RejectsPerPage = 50
	// WarningsPerPage is how many warnings (dropped values) a run page lists at a time.
	WarningsPerPage = 50
	// RemovedPerPage is how many of the people a sync unsubscribed a run page lists at a time.
	RemovedPerPage = 50
)

// runData is a run's page: its counts in its own words, and for an import or a sync the whole
// story: rejects by code and a page of them, warnings by code and a page of them, the source
// columns it did not send, and whom it unsubscribed.
type runData struct {
	Run   state.Run
	Words jobs.RunWords
	Rows  bool // an import or a sync: it reads and sends rows
	// Progress is how far a run under way has come; nil once it ended.
	Progress *runProgress
	Already  bool // an action that opened the page found the job queued or running already

	RejectCodes []state.CodeSummary
	Rejects     []state.Reject
	Next        string // the link to the next page of rejects
	First       bool

	WarningCodes  []state.CodeSummary
	Warnings      []state.Warning
	WarningsTotal int64
	NextWarnings  string
	FirstWarnings bool

	Unplaced, Ignored []string

	Removals     state.RemovalCounts
	Removed      []state.Removed
	NextRemoved  string
	FirstRemoved bool
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	run, ok := s.runByPath(w, r)
	if !ok {
		return
	}
	s.showRun(w, r, run)
}

// showRun renders a run's page; one under way follows it live.
func (s *Server) showRun(w http.ResponseWriter, r *http.Request, run state.Run) {
	d := runData{Run: run, Words: jobs.DescribeRun(run), Progress: progressOf(run, s.opts.Now()), Already: already(r)}
	d.Rows = d.Words.Object == "counts"
	if d.Rows {
		if err := s.runStory(r, &d); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	every := time.Duration(0)
	if !run.State.Final() {
		every = LiveEvery
	}
	s.renderLive(w, r, "run", fmt.Sprintf("Run %d", run.ID), d, every)
}

// runStory reads what the page of an import or a sync tells besides its counts; the query's
// after, warnings_after and removed_after page through rejects, warnings and removals.
func (s *Server) runStory(r *http.Request, d *runData) error {
	ctx, st, q, id := r.Context(), s.b.State(), r.URL.Query(), d.Run.ID
	link := func(key, value string) string {
		return fmt.Sprintf("/runs/%d?%s", id, url.Values{key: {value}}.Encode())
	}
	var err error
	if d.RejectCodes, err = st.RejectSummary(ctx, id); err != nil {
		return err
	}
	after, _ := strconv.ParseInt(q.Get("after"), 10, 64)
	d.First = after == 0
	if d.Rejects, err = st.RejectsPage(ctx, id, after, RejectsPerPage+1); err != nil {
		return err
	}
	if len(d.Rejects) > RejectsPerPage {
		d.Rejects = d.Rejects[:RejectsPerPage]
		d.Next = link("after", strconv.FormatInt(d.Rejects[len(d.Rejects)-1].Ordinal, 10))
	}

	if d.WarningCodes, err = st.WarningSummary(ctx, id); err != nil {
		return err
	}
	for _, c := range d.WarningCodes {
		d.WarningsTotal += c.Count
	}
	wOrd, wSeq := cursor(q.Get("warnings_after"))
	d.FirstWarnings = wOrd == 0 && wSeq == 0
	if d.WarningsTotal > 0 {
		if d.Warnings, err = st.WarningsPage(ctx, id, wOrd, wSeq, WarningsPerPage+1); err != nil {
			return err
		}
		if len(d.Warnings) > WarningsPerPage {
			d.Warnings = d.Warnings[:WarningsPerPage]
			last := d.Warnings[len(d.Warnings)-1]
			d.NextWarnings = link("warnings_after", fmt.Sprintf("%d.%d", last.Ordinal, last.Seq))
		}
	}

	if d.Unplaced, d.Ignored, err = st.ColumnsNotSent(ctx, id); err != nil {
		return err
	}

	if d.Run.Counts.Removed == 0 {
		return nil
	}
	if d.Removals, err = st.CountRemoved(ctx, id); err != nil {
		return err
	}
	rAfter, _ := strconv.ParseInt(q.Get("removed_after"), 10, 64)
	d.FirstRemoved = rAfter == 0
	if d.Removed, err = st.RemovedPage(ctx, id, rAfter, RemovedPerPage+1); err != nil {
		return err
	}
	if len(d.Removed) > RemovedPerPage {
		d.Removed = d.Removed[:RemovedPerPage]
		d.NextRemoved = link("removed_after", strconv.FormatInt(d.Removed[len(d.Removed)-1].ID, 10))
	}
	return nil
}

// cursor reads "ORDINAL.SEQ" (a page of warnings goes on after it); 0, 0 when absent or bad.
func cursor(v string) (int64, int64) {
	a, b, _ := strings.Cut(v, ".")
	ord, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || ord < 0 || seq < 0 {
		return 0, 0
	}
	return ord, seq
}
