package pipeline

import (
	"strings"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/state"
)

// outcome is what happened to one row outside of a batch's acknowledgement; or, with run
// set, to the run of rows ord-run+1 to ord, each unchanged and nothing more (see
// appendUnchanged).
type outcome struct {
	ord    int64
	run    int64 // outUnchanged: the rows of the run, when more than one
	kind   outcomeKind
	reject *state.Reject // outRejected, outWarning
	note   *planNote     // dry runs only
	// refresh is stored with the checkpoint: an unchanged payload whose source values
	// changed (the next run then finds the row unchanged without mapping it).
	refresh *state.Fingerprint
	// member is recorded in the sync's roster with the checkpoint (an unchanged row the
	// roster lacks).
	member *state.Member
}

// outcomeKind is what happened to a row: what it counts as.
type outcomeKind uint8

const (
	outRejected outcomeKind = iota + 1
	outDuplicate
	outSuppressed
	outUnchanged
	// outWarning: a value of the row was dropped (reject holds why); the row itself has an
	// outcome of its own, or is sent. It counts nothing.
	outWarning
	// outFiltered: the mapping's where expression left the row out.
	outFiltered
)

// counts is what the outcome adds to a run's counts.
func (o *outcome) counts() state.Counts {
	switch o.kind {
	case outRejected:
		return state.Counts{Rejected: 1}
	case outDuplicate:
		return state.Counts{Duplicates: 1}
	case outSuppressed:
		return state.Counts{Suppressed: 1}
	case outUnchanged:
		return state.Counts{Unchanged: max(o.run, 1)}
	case outFiltered:
		return state.Counts{Filtered: 1}
	}
	return state.Counts{}
}

// plain reports whether the outcome is an unchanged row (or run) and nothing more: no note,
// no fingerprint to refresh, no roster member.
func (o *outcome) plain() bool {
	return o.kind == outUnchanged && o.note == nil && o.refresh == nil && o.member == nil && o.reject == nil
}

// appendUnchanged appends a plain unchanged outcome o to outs: as a run with the last
// outcome when that is a plain one of the row before. A delta sync finds most rows
// unchanged: their outcomes are counted a run at a time, not a row at a time.
func appendUnchanged(outs []outcome, o outcome) []outcome {
	if n := len(outs); n > 0 {
		if last := &outs[n-1]; last.plain() && last.ord == o.ord-1 {
			last.ord, last.run = o.ord, max(last.run, 1)+1
			return outs
		}
	}
	return append(outs, o)
}

// split takes the rows at or below w off a run that goes past w, returning them as a run
// of their own; o keeps the rest.
func (o *outcome) split(w int64) outcome {
	k := w - (o.ord - o.run) // rows ord-run+1..w
	head := outcome{ord: w, run: k, kind: outUnchanged}
	o.run -= k
	return head
}

// straddles reports whether o is a run with rows on both sides of w.
func (o *outcome) straddles(w int64) bool { return o.run > 1 && o.ord > w && o.ord-o.run < w }

// planNote is what a dry run's plan says of a row that is not sent: its line, e-mail, and
// the suppressed status of a suppressed row.
type planNote struct {
	line   int
	email  string
	status string
}

// newOutcome returns the outcome of a row; a dry run's also says which row (and status).
func newOutcome(r *mapping.Row, kind outcomeKind, status string, dryRun bool) outcome {
	o := outcome{ord: r.Ordinal, kind: kind}
	if dryRun {
		o.note = &planNote{line: r.Line, email: strings.Clone(r.Sub.Email), status: status} // r's chunk is released
	}
	return o
}
