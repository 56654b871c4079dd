// Package runjson is a run and a job as JSON: the one form of `subsync runs --json`,
// `runs ID --json`, `jobs ls --json` and the HTTP API's runs and jobs (web), so that a
// script and a program read the same fields.
package runjson

import (
	"context"
	"time"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// Run is a run of the history.
type Run struct {
	ID     int64  `json:"id"`
	JobID  int64  `json:"job_id"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	ListID int64  `json:"list_id,omitempty"`
	Source string `json:"source,omitempty"`
	State  string `json:"state"`
	// Error is why a run failed or was cancelled, or why its last attempt stopped; Note is
	// what a completed run reports (a verification's difference, an erasure's audit line, a
	// write-back that failed or matched nothing). A run has one or the other, or neither.
	Error     string `json:"error,omitempty"`
	Note      string `json:"note,omitempty"`
	Position  int64  `json:"position"`
	TotalRows int64  `json:"total_rows,omitempty"`
	// Summary tells the run's counts on one line in the words of its kind. An import or a
	// sync has Counts; a status pull Changes; a reconciliation Reconciled; an erasure Erasure
	// (see jobs.DescribeRun for the keys).
	Summary    string           `json:"summary"`
	Counts     *Counts          `json:"counts,omitempty"`
	Changes    map[string]int64 `json:"changes,omitempty"`
	Reconciled map[string]int64 `json:"reconciled,omitempty"`
	Erasure    map[string]int64 `json:"erasure,omitempty"`
	Attempts   int              `json:"attempts"`
	Worker     string           `json:"worker,omitempty"`
	Scheduled  time.Time        `json:"scheduled_at"`
	Started    *time.Time       `json:"started_at,omitempty"`
	Finished   *time.Time       `json:"finished_at,omitempty"`
	DurationMS int64            `json:"duration_ms"`
	// RejectsPrunedAt is when the retention policy deleted the run's rejects, warnings and
	// removals; its counts stay.
	RejectsPrunedAt *time.Time `json:"rejects_pruned_at,omitempty"`
	// Warnings counts the values dropped from rows that were sent (on_invalid = "drop"), by
	// code; only in the output of one run (Detail).
	Warnings map[string]int64 `json:"warnings,omitempty"`
	// ColumnsNotSent are the source columns neither mapped nor ignored, IgnoredColumns those
	// the mapping ignores; Removals counts whom a sync unsubscribed (runs ID --removed lists
	// them). Only in the output of one run (Detail).
	ColumnsNotSent []string  `json:"columns_not_sent,omitempty"`
	IgnoredColumns []string  `json:"ignored_columns,omitempty"`
	Removals       *Removals `json:"removals,omitempty"`
}

// Counts are an import's or a sync's counts.
type Counts struct {
	Read       int64 `json:"read"`
	Sent       int64 `json:"sent"`
	Rejected   int64 `json:"rejected"`
	Duplicates int64 `json:"duplicates"`
	Suppressed int64 `json:"suppressed"`
	Unchanged  int64 `json:"unchanged"`
	Filtered   int64 `json:"filtered"`
	Batches    int64 `json:"batches"`
	Requests   int64 `json:"requests"`
	Retries    int64 `json:"retries"`
	Removed    int64 `json:"removed"`
}

// Removals count whom a sync unsubscribed: who left the source, and the old addresses of
// keys that came with a new one.
type Removals struct {
	Left  int64 `json:"left"`
	Moved int64 `json:"moved"`
}

// TimePtr is t, or nil for the zero time (left out of the JSON).
func TimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// FromRun is a run as a list shows it.
func FromRun(r state.Run) Run {
	c := r.Counts
	words := jobs.DescribeRun(r)
	j := Run{
		ID: r.ID, JobID: r.JobID, Kind: r.Kind, Name: r.Name, ListID: r.ListID, Source: r.Source,
		State: string(r.State), Position: r.Position, TotalRows: r.TotalRows, Summary: words.Summary(),
		Attempts: r.Attempts, Worker: r.Worker, Scheduled: r.ScheduledAt,
		Started: TimePtr(r.StartedAt), Finished: TimePtr(r.FinishedAt), DurationMS: r.Duration().Milliseconds(),
		RejectsPrunedAt: TimePtr(r.RejectsPrunedAt),
	}
	if r.State == state.RunCompleted {
		j.Note = r.Error
	} else {
		j.Error = r.Error
	}
	switch words.Object {
	case "changes":
		j.Changes = words.Map()
	case "reconciled":
		j.Reconciled = words.Map()
	case "erasure":
		j.Erasure = words.Map()
	default:
		j.Counts = &Counts{c.Read, c.Sent, c.Rejected, c.Duplicates, c.Suppressed, c.Unchanged, c.Filtered, c.Batches, c.Requests, c.Retries, c.Removed}
	}
	return j
}

// Story is what one run tells besides its counts: its warnings by code, the source columns
// it did not send, and whom a sync unsubscribed, by why.
type Story struct {
	Warnings          map[string]int64
	Unplaced, Ignored []string
	Removals          state.RemovalCounts
}

// ReadStory reads the story of run r.
func ReadStory(ctx context.Context, store *state.Store, r state.Run) (Story, error) {
	var s Story
	var err error
	if s.Warnings, err = store.WarningCounts(ctx, r.ID); err != nil {
		return s, err
	}
	if s.Unplaced, s.Ignored, err = store.ColumnsNotSent(ctx, r.ID); err != nil {
		return s, err
	}
	if r.Counts.Removed > 0 {
		if s.Removals, err = store.CountRemoved(ctx, r.ID); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Detail is one run as `runs ID --json` shows it: FromRun with its story.
func Detail(r state.Run, s Story) Run {
	j := FromRun(r)
	if len(s.Warnings) > 0 {
		j.Warnings = s.Warnings
	}
	j.ColumnsNotSent, j.IgnoredColumns = s.Unplaced, s.Ignored
	if s.Removals != (state.RemovalCounts{}) {
		j.Removals = &Removals{Left: s.Removals.Left, Moved: s.Removals.Moved}
	}
	return j
}

// Job is a queued or running job (jobs ls --json), or any job the API is asked about.
type Job struct {
	ID          int64      `json:"id"`
	Kind        string     `json:"kind"`
	State       string     `json:"state"`
	Name        string     `json:"name"`
	ListID      int64      `json:"list_id,omitempty"`
	Attempt     int        `json:"attempt"`
	MaxAttempts int        `json:"max_attempts"`
	CreatedAt   time.Time  `json:"created_at"`
	ScheduledAt time.Time  `json:"scheduled_at"`
	AttemptedAt *time.Time `json:"attempted_at,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
}

// FromJob is a job's info as JSON.
func FromJob(j jobs.JobInfo) Job {
	return Job{j.ID, j.Kind, j.State, j.Name, j.ListID, j.Attempt, j.MaxAttempts,
		j.CreatedAt, j.ScheduledAt, TimePtr(j.AttemptedAt), j.LastError}
}

// Plan is a dry run's summary (import or sync --dry-run --json, the API's dry runs).
type Plan struct {
	DryRun        bool             `json:"dry_run"`
	Read          int64            `json:"read"`
	Send          int64            `json:"send"`
	SendByStatus  map[string]int64 `json:"send_by_status"`
	Unchanged     int64            `json:"unchanged"`
	Suppressed    int64            `json:"suppressed"`
	Duplicates    int64            `json:"duplicates"`
	Rejected      int64            `json:"rejected"`
	RejectsByCode map[string]int64 `json:"rejects_by_code"`
	Remove        int64            `json:"remove"`
	RemovalsNote  string           `json:"removals_note,omitempty"`
	PlanFile      string           `json:"plan_file,omitempty"`
}

// FromPlan is a dry run's summary as JSON.
func FromPlan(p jobs.Plan) Plan {
	c := p.Counts
	return Plan{DryRun: true, Read: c.Read, Send: c.Sent, SendByStatus: p.ByStatus,
		Unchanged: c.Unchanged, Suppressed: c.Suppressed, Duplicates: c.Duplicates, Rejected: c.Rejected,
		RejectsByCode: p.RejectsByCode, Remove: c.Removed, RemovalsNote: p.RemovalsStopped}
}

// Schedule is a schedule as `schedules --json` prints it.
type Schedule struct {
	Kind     string      `json:"kind"`
	Also     string      `json:"also,omitempty"` // "verify" (verify_every) or "reconcile" (reconcile_schedule)
	Name     string      `json:"name,omitempty"`
	ListID   int64       `json:"list_id,omitempty"`
	Schedule string      `json:"schedule"`
	TimeZone string      `json:"time_zone"`
	Next     []time.Time `json:"next"`
	Error    string      `json:"error,omitempty"`
}

// FromSchedule is a schedule as JSON: UTC for no time zone, an empty list of next runs for
// a sync run on demand only.
func FromSchedule(s jobs.Schedule) Schedule {
	j := Schedule{Kind: s.Kind, Also: s.Also, Name: s.Name, ListID: s.ListID, Schedule: s.Spec,
		TimeZone: s.TimeZone, Next: s.Next}
	if j.TimeZone == "" {
		j.TimeZone = "UTC"
	}
	if j.Next == nil {
		j.Next = []time.Time{}
	}
	if s.Err != nil {
		j.Error = s.Err.Error()
	}
	return j
}

// ForgetPlan is what erasing one address would do (forget --dry-run --json).
type ForgetPlan struct {
	Email         string           `json:"email"`
	SubscriberID  int64            `json:"subscriber_id,omitempty"`
	InService     bool             `json:"in_service"`
	AlreadyErased bool             `json:"already_erased"`
	Held          map[string]int64 `json:"held"`
}

// FromForgetPlans are the plans of an erasure as JSON.
func FromForgetPlans(plans []jobs.ForgetPlan) []ForgetPlan {
	out := make([]ForgetPlan, len(plans))
	for i, p := range plans {
		out[i] = ForgetPlan{Email: p.Email, SubscriberID: p.SubscriberID, InService: p.SubscriberID != 0,
			AlreadyErased: p.AlreadyErased, Held: p.Held}
		if out[i].Held == nil {
			out[i].Held = map[string]int64{}
		}
	}
	return out
}
