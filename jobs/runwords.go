package jobs

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/subsync/subsync/state"
)

// Each kind of run says what it did in its own words: an import or a sync reads rows and sends
// them; a status pull reads the service's status changes, records the new ones and writes
// them back to the source; a reconciliation finds the unsubscribed and bounced people of the
// lists; an erasure erases people. A run's counts live in state.Counts, whatever its kind;
// DescribeRun is the one place that says what each count means for each kind, for run
// history (subsync runs, --json), the log and the pages.

// RunFact is one count of a run.
type RunFact struct {
	Key   string // the name in JSON and in the log (snake case)
	Label string // the name people read
	Value int64
}

// RunWords are a run's counts in the words of its kind.
type RunWords struct {
	// Object names the counts in JSON: "counts" (an import or a sync), "changes" (a status
	// pull), "reconciled" (a reconciliation) or "erasure" (forget).
	Object string
	Facts  []RunFact
	// summary: the facts on one line, in the order they are told.
	summary []int
}

// Summary tells the main facts on one line ("1200 read, 1150 sent, 50 rejected"), leaving
// out the secondary facts that are zero.
func (w RunWords) Summary() string {
	var parts []string
	for i, idx := range w.summary {
		f := w.Facts[idx]
		if f.Value == 0 && i >= 2 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d %s", f.Value, f.Label))
	}
	return strings.Join(parts, ", ")
}

// Map is the facts by key, as JSON shows them.
func (w RunWords) Map() map[string]int64 {
	m := make(map[string]int64, len(w.Facts))
	for _, f := range w.Facts {
		m[f.Key] = f.Value
	}
	return m
}

// DescribeRun tells a run's counts in the words of its kind.
func DescribeRun(r state.Run) RunWords {
	c := r.Counts
	switch {
	case r.Kind == KindStatusPull && r.Name == "reconcile":
		return RunWords{Object: "reconciled", Facts: []RunFact{
			{"found", "unsubscribed or bounced found", c.Read},
			{"already_known", "already known", c.Duplicates},
			{"recorded", "recorded", c.Read - c.Duplicates},
			{"requests", "requests", c.Requests},
		}, summary: []int{0, 2, 1}}
	case r.Kind == KindStatusPull:
		return RunWords{Object: "changes", Facts: []RunFact{
			{"read", "changes read", c.Read},
			{"already_known", "already known", c.Duplicates},
			{"recorded", "recorded", c.Read - c.Duplicates},
			{"written_back", "written back", c.Sent},
			{"unmatched", "matched nothing in the source", c.Unmatched},
			{"requests", "requests", c.Requests},
		}, summary: []int{0, 2, 3, 4}}
	case r.Kind == KindForget:
		return RunWords{Object: "erasure", Facts: []RunFact{
			{"people_erased", "erased", c.Read},
			{"deleted_in_service", "deleted in the service", c.Sent},
			{"not_in_service", "not held by the service", c.Read - c.Sent},
			{"unmatched", "matched nothing in the source", c.Unmatched},
		}, summary: []int{0, 1, 2, 3}}
	}
	return RunWords{Object: "counts", Facts: []RunFact{
		{"read", "rows read", c.Read},
		{"sent", "sent", c.Sent},
		{"rejected", "rejected", c.Rejected},
		{"duplicates", "duplicates", c.Duplicates},
		{"suppressed", "suppressed", c.Suppressed},
		{"unchanged", "unchanged", c.Unchanged},
		{"filtered", "filtered (where)", c.Filtered},
		{"removed", "removed (unsubscribed)", c.Removed},
		{"batches", "batches", c.Batches},
		{"requests", "requests", c.Requests},
		{"retries", "retries", c.Retries},
	}, summary: []int{0, 1, 2, 3, 4, 5, 6, 7}}
}

// runAttrs are the attributes of the log line of a run's end: its counts in the words of its
// kind, its duration, and its message: the error of a run that failed or was cancelled, the
// note of one that completed (never an error: a completed run did its work).
func runAttrs(r state.Run, msg string) []slog.Attr {
	var attrs []slog.Attr
	for _, f := range DescribeRun(r).Facts {
		attrs = append(attrs, slog.Int64(f.Key, f.Value))
	}
	attrs = append(attrs, slog.Duration("duration", r.Duration()))
	switch {
	case msg == "":
	case r.State == state.RunCompleted:
		attrs = append(attrs, slog.String("note", msg))
	default:
		attrs = append(attrs, slog.String("error", msg))
	}
	return attrs
}
