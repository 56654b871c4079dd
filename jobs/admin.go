package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/subsync/subsync/state"
)

// JobInfo describes a queued or running job.
type JobInfo struct {
	ID          int64
	Kind        string
	State       string // available, scheduled, retryable, running, pending; completed, cancelled, discarded (Job)
	Name        string // the sync's name, the import's file name or source
	ListID      int64
	Attempt     int
	MaxAttempts int
	CreatedAt   time.Time
	ScheduledAt time.Time
	AttemptedAt time.Time // zero before the first attempt
	LastError   string
}

// Jobs lists the jobs queued or running, oldest first (at most 1000).
func (rt *Runtime) Jobs(ctx context.Context) ([]JobInfo, error) {
	res, err := rt.q.JobList(ctx, river.NewJobListParams().
		States(activeStates...).
		OrderBy(river.JobListOrderByID, river.SortOrderAsc).
		First(1000))
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	out := make([]JobInfo, 0, len(res.Jobs))
	for _, j := range res.Jobs {
		out = append(out, jobInfo(j))
	}
	return out, nil
}

// Errors of a job asked about by id.
var (
	// ErrNoSuchJob: the queue has no job with that id (never, or cleaned away).
	ErrNoSuchJob = errors.New("no such job")
	// ErrJobEnded: the job to cancel has ended already.
	ErrJobEnded = errors.New("already ended")
)

// Job describes one job, in any state (completed, cancelled and discarded too, until River
// cleans it away); ErrNoSuchJob when there is none.
func (rt *Runtime) Job(ctx context.Context, jobID int64) (JobInfo, error) {
	job, err := rt.q.JobGet(ctx, jobID)
	if errors.Is(err, rivertype.ErrNotFound) {
		return JobInfo{}, fmt.Errorf("job %d: %w", jobID, ErrNoSuchJob)
	}
	if err != nil {
		return JobInfo{}, fmt.Errorf("read job %d: %w", jobID, err)
	}
	return jobInfo(job), nil
}

func jobInfo(j *rivertype.JobRow) JobInfo {
	info := JobInfo{ID: j.ID, Kind: j.Kind, State: string(j.State), Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		CreatedAt: j.CreatedAt, ScheduledAt: j.ScheduledAt}
	if j.AttemptedAt != nil {
		info.AttemptedAt = *j.AttemptedAt
	}
	if n := len(j.Errors); n > 0 {
		info.LastError = j.Errors[n-1].Error
	}
	switch j.Kind {
	case KindImport:
		var a ImportArgs
		if json.Unmarshal(j.EncodedArgs, &a) == nil {
			d := a.describe()
			info.Name, info.ListID = d.name, a.ListID
		}
	case KindSync:
		var a SyncArgs
		if json.Unmarshal(j.EncodedArgs, &a) == nil {
			info.Name = a.Name
		}
	case KindStatusPull:
		info.Name = "status"
	case KindForget:
		info.Name = "forget"
	}
	return info
}

// CancelJob cancels a job: a queued one at once (its run is recorded as cancelled), a
// running one as soon as its worker notices (it records the run as cancelled; rows already
// acknowledged stay sent).
func (rt *Runtime) CancelJob(ctx context.Context, jobID int64) error {
	job, err := rt.q.JobGet(ctx, jobID)
	if errors.Is(err, rivertype.ErrNotFound) {
		return fmt.Errorf("job %d: %w", jobID, ErrNoSuchJob)
	}
	if err != nil {
		return fmt.Errorf("cancel job %d: %w", jobID, err)
	}
	switch job.State {
	case rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
		return fmt.Errorf("job %d %w (%s)", jobID, ErrJobEnded, job.State)
	}
	job, err = rt.q.JobCancel(ctx, jobID)
	if errors.Is(err, rivertype.ErrNotFound) {
		return fmt.Errorf("job %d: %w", jobID, ErrNoSuchJob)
	}
	if err != nil {
		return fmt.Errorf("cancel job %d: %w", jobID, err)
	}
	switch job.State {
	case rivertype.JobStateCompleted, rivertype.JobStateDiscarded:
		return fmt.Errorf("job %d %w (%s)", jobID, ErrJobEnded, job.State)
	case rivertype.JobStateCancelled:
		info := jobInfo(job)
		if err := rt.store.CancelQueued(ctx, state.Claim{JobID: job.ID, Kind: job.Kind, Name: info.Name,
			ListID: info.ListID, ScheduledAt: job.ScheduledAt}, "cancelled before it started"); err != nil {
			return err
		}
		rt.dropStaged(ctx, job)
	}
	return nil
}

// dropStaged deletes the staged file of a cancelled import.
func (rt *Runtime) dropStaged(ctx context.Context, job *rivertype.JobRow) {
	if job.Kind != KindImport {
		return
	}
	var a ImportArgs
	if json.Unmarshal(job.EncodedArgs, &a) == nil && a.StagedFile != 0 {
		if err := rt.store.DeleteStaged(ctx, a.StagedFile); err != nil {
			rt.log.WarnContext(ctx, "could not delete the staged file", slog.Int64("job_id", job.ID), slog.Any("error", err))
		}
	}
}
