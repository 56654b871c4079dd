package web

import (
	"fmt"
	"slices"
	"time"

	"github.com/subsync/subsync/state"
)

// The history chart of a sync's page: its last runs, oldest on the left, as small multiples,
// one strip of bars per measure (sent, unchanged, rejected, removed, duration), each on its
// own scale (a nightly sync's unchanged rows dwarf what it sends). It is drawn on the server
// as SVG with presentation attributes, no script and no inline style, so the pages' CSP holds.
const (
	chartWidth   = 760
	chartLabelW  = 150 // the strip's name and its largest value, left of the bars
	chartStripH  = 46
	chartGap     = 14
	chartBarsTop = 4
	chartBarMax  = chartStripH - chartBarsTop - 2
)

// chart is what the template draws.
type chart struct {
	Width, Height int
	LabelW        int // where the bars begin
	Strips        []strip
	Runs          int
}

type strip struct {
	Name, Class string
	Max         string // the largest value, as people read it
	Y           int    // top of the strip
	Base        int    // the bars' baseline
	Bars        []bar
}

type bar struct {
	X, Y, W, H int
	Title      string // the bar's tooltip: run, value
	Failed     bool   // the run did not complete
	Run        int64
}

// measure is one strip of the chart.
type measure struct {
	name, class string
	value       func(state.Run) int64
	format      func(int64) string
}

var chartMeasures = []measure{
	{"sent", "sent", func(r state.Run) int64 { return r.Counts.Sent }, count},
	{"unchanged", "unchanged", func(r state.Run) int64 { return r.Counts.Unchanged }, count},
	{"rejected", "rejected", func(r state.Run) int64 { return r.Counts.Rejected }, count},
	{"removed", "removed", func(r state.Run) int64 { return r.Counts.Removed }, count},
	{"duration", "duration", func(r state.Run) int64 { return int64(r.Duration()) },
		func(v int64) string { return formatDuration(time.Duration(v)) }},
}

func count(v int64) string { return fmt.Sprint(v) }

// historyChart draws runs (newest first, as the history gives them) oldest on the left.
func historyChart(runs []state.Run) chart {
	runs = slices.Clone(runs)
	slices.Reverse(runs)
	c := chart{Width: chartWidth, LabelW: chartLabelW, Runs: len(runs)}
	n := max(len(runs), 1)
	slot := (chartWidth - chartLabelW) / n
	w := max(slot*3/4, 2)
	for i, m := range chartMeasures {
		s := strip{Name: m.name, Class: m.class, Y: i * (chartStripH + chartGap)}
		s.Base = s.Y + chartStripH - 2
		var top int64
		for _, r := range runs {
			top = max(top, m.value(r))
		}
		s.Max = m.format(top)
		for k, r := range runs {
			v := m.value(r)
			h := 0
			if top > 0 {
				h = int((v*chartBarMax + top - 1) / top) // a value above zero shows
			}
			s.Bars = append(s.Bars, bar{
				X: chartLabelW + k*slot + (slot-w)/2, Y: s.Base - h, W: w, H: h, Run: r.ID,
				Title:  fmt.Sprintf("run %d (%s): %s %s", r.ID, r.State, m.format(v), m.name),
				Failed: r.State != state.RunCompleted,
			})
		}
		c.Strips = append(c.Strips, s)
	}
	c.Height = len(chartMeasures)*(chartStripH+chartGap) - chartGap
	return c
}
