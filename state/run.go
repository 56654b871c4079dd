package state

import (
	"time"
)

// Run kinds, matching the job kinds.
const (
	KindImport     = "import"
	KindSync       = "sync"
	KindStatusPull = "status_pull"
	KindForget     = "forget"
)

// RunState is where a run stands.
type RunState string

// Run states. Completed, Failed and Cancelled are final.
const (
	// RunRunning: an attempt owns the run (see Run.LeaseUntil for whether it is still alive).
	RunRunning RunState = "running"
	// RunRetrying: the last attempt failed with a transient error; the queue retries it.
	RunRetrying RunState = "retrying"
	// RunInterrupted: the worker shut down gracefully; the run resumes on the next start.
	RunInterrupted RunState = "interrupted"
	RunCompleted   RunState = "completed"
	RunFailed      RunState = "failed"
	RunCancelled   RunState = "cancelled"
)

// Final reports whether no more work will happen on a run in this state.
func (s RunState) Final() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}

// Counts are the row and request counters of a run.
type Counts struct {
	Read       int64 // source rows consumed (including unreadable rows)
	Rejected   int64 // rows not sent because they are invalid (see Rejects)
	Duplicates int64 // rows whose e-mail appeared earlier in the run
	Suppressed int64 // rows skipped because the person unsubscribed or bounced
	Unchanged  int64 // rows skipped because their payload is unchanged since the last push
	Filtered   int64 // rows the mapping's where expression left out (not rejected)
	Sent       int64 // rows acknowledged by the service
	// Removed is the people a sync unsubscribed because they left its source, or because
	// their key came with a new address (see Store.LoadRoster).
	Removed int64
	// Unmatched is the status changes (or erasures) a write-back applied to nothing: the
	// source held no row for the person.
	Unmatched int64
	Batches   int64 // bulk batches acknowledged
	Requests  int64 // HTTP requests made (including retries and 422 splits)
	Retries   int64 // HTTP retries
}

// Add returns c + o.
func (c Counts) Add(o Counts) Counts {
	return Counts{
		Read: c.Read + o.Read, Rejected: c.Rejected + o.Rejected, Duplicates: c.Duplicates + o.Duplicates,
		Suppressed: c.Suppressed + o.Suppressed, Unchanged: c.Unchanged + o.Unchanged, Sent: c.Sent + o.Sent,
		Filtered: c.Filtered + o.Filtered,
		Removed:  c.Removed + o.Removed, Unmatched: c.Unmatched + o.Unmatched,
		Batches: c.Batches + o.Batches, Requests: c.Requests + o.Requests, Retries: c.Retries + o.Retries,
	}
}

// Run is one row of run history.
type Run struct {
	ID     int64
	JobID  int64
	Kind   string // KindImport, KindSync, KindStatusPull
	Name   string // sync name, or the file name of an import
	ListID int64
	Source string // a path or a source name; never a DSN
	State  RunState
	Error  string // why the run failed, or why the last attempt stopped; empty once completed

	// Position is the checkpoint: every source row with Ordinal <= Position is done.
	Position   int64
	TotalRows  int64 // 0 when unknown
	BytesDone  int64 // source bytes consumed at the checkpoint, for files
	TotalBytes int64 // file size, 0 when unknown
	Counts     Counts
	Attempts   int
	Worker     string // the worker (queue client id) of the latest attempt

	LeaseOwner string
	LeaseUntil time.Time

	ScheduledAt time.Time // the tick of a scheduled run, or when the job was queued
	StartedAt   time.Time
	UpdatedAt   time.Time
	FinishedAt  time.Time
	// RejectsPrunedAt is when the retention policy deleted the run's rejects, warnings and
	// removals (zero while they are kept): its counts stay.
	RejectsPrunedAt time.Time
}

// Duration is how long the run took, or has taken so far.
func (r Run) Duration() time.Duration {
	end := r.FinishedAt
	if end.IsZero() {
		end = r.UpdatedAt
	}
	if r.StartedAt.IsZero() || end.Before(r.StartedAt) {
		return 0
	}
	return end.Sub(r.StartedAt)
}

const runColumns = `id, job_id, kind, name, list_id, source, state, error, position, total_rows,
bytes_done, total_bytes, rows_read, rows_rejected, rows_duplicate, rows_suppressed, rows_unchanged,
rows_sent, batches, requests, retries, attempts, worker, lease_owner, lease_until, scheduled_at,
started_at, updated_at, finished_at, rows_removed, rows_unmatched, rows_filtered, rejects_pruned_at`

type rowScanner interface{ Scan(dest ...any) error }

func scanRun(sc rowScanner) (Run, error) {
	var r Run
	var state string
	var leaseUntil, scheduled, started, updated, finished, pruned int64
	err := sc.Scan(&r.ID, &r.JobID, &r.Kind, &r.Name, &r.ListID, &r.Source, &state, &r.Error,
		&r.Position, &r.TotalRows, &r.BytesDone, &r.TotalBytes,
		&r.Counts.Read, &r.Counts.Rejected, &r.Counts.Duplicates, &r.Counts.Suppressed, &r.Counts.Unchanged,
		&r.Counts.Sent, &r.Counts.Batches, &r.Counts.Requests, &r.Counts.Retries, &r.Attempts, &r.Worker,
		&r.LeaseOwner, &leaseUntil, &scheduled, &started, &updated, &finished, &r.Counts.Removed, &r.Counts.Unmatched, &r.Counts.Filtered, &pruned)
	if err != nil {
		return Run{}, err
	}
	r.State = RunState(state)
	r.LeaseUntil = fromMicros(leaseUntil)
	r.ScheduledAt = fromMicros(scheduled)
	r.StartedAt = fromMicros(started)
	r.UpdatedAt = fromMicros(updated)
	r.FinishedAt = fromMicros(finished)
	r.RejectsPrunedAt = fromMicros(pruned)
	return r, nil
}
