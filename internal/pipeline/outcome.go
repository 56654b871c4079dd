package pipeline

import (
	"strings"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/state"
)

// outcome is what happened to one row outside of a batch's acknowledgement.
type outcome struct {
	ord    int64
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
		return state.Counts{Unchanged: 1}
	}
	return state.Counts{}
}

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
