package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/subsync/subsync/state"
)

// Errors Wait returns (wrapped, with the run's message) when the awaited run did not complete.
var (
	ErrRunFailed    = errors.New("run failed")
	ErrRunCancelled = errors.New("run cancelled")
)

// Progress is what Wait reports while a run goes on.
type Progress struct {
	JobID int64
	RunID int64 // 0 until a worker starts the run
	// Kind and Name are the run's (see state.Run); empty until a worker starts the run.
	Kind, Name string
	// State is "queued" until a worker starts the run, then the run's state.
	State string
	// Rows is how many source rows are done (checkpointed); TotalRows is 0 when the source
	// does not know it in advance. Bytes and TotalBytes do the same for files.
	Rows, TotalRows   int64
	Bytes, TotalBytes int64
	Counts            state.Counts
}

// Wait follows a job until its run ends, calling progress (if not nil) every PollInterval
// and as soon as a run worked by this process ends, and returns the run. A run that failed
// or was cancelled is returned with an error wrapping ErrRunFailed or ErrRunCancelled.
//
// Wait never takes a job from a live worker: while a long-lived worker of the database (Run,
// here or in another process) has a current heartbeat, Wait leaves the job to it and only
// follows the run's state. When none is alive, at the start or later (it stopped), Wait works
// jobs itself: it starts a River client on the same database (without the schedules) and
// stops it once the awaited run ended. Other jobs this client picked up meanwhile are
// interrupted and resume later.
func (rt *Runtime) Wait(ctx context.Context, jobID int64, progress func(Progress)) (run state.Run, err error) {
	var stop func(hurry bool) error
	defer func() {
		if stop != nil {
			// A waiter that gives up, or whose run's end the database could not record (a
			// full disk), does not wait out the soft stop of the jobs this process works.
			if stopErr := stop(ctx.Err() != nil || rt.lostEnd(jobID) != nil); stopErr != nil && err == nil {
				err = stopErr
			}
		}
	}()
	var following string // the live worker the job is left to
	t := time.NewTicker(rt.cfg.PollInterval)
	defer t.Stop()
	for {
		if stop == nil {
			stop, following = rt.workUnlessWorked(ctx, jobID, following)
		}
		ended := rt.runEnded() // before reading the run: an end recorded after the read wakes this
		run, err := rt.store.RunByJob(ctx, jobID)
		if lost := rt.lostEnd(jobID); lost != nil {
			return run, lost
		}
		switch {
		case err == nil:
			if progress != nil {
				progress(Progress{JobID: jobID, RunID: run.ID, Kind: run.Kind, Name: run.Name, State: string(run.State), Rows: run.Position,
					TotalRows: run.TotalRows, Bytes: run.BytesDone, TotalBytes: run.TotalBytes, Counts: run.Counts})
			}
			switch run.State {
			case state.RunCompleted:
				return run, rt.awaitJobSettled(ctx, jobID)
			case state.RunFailed:
				return run, errors.Join(fmt.Errorf("run %d (job %d): %w: %s", run.ID, jobID, ErrRunFailed, run.Error),
					rt.awaitEndSettled(ctx, jobID))
			case state.RunCancelled:
				return run, errors.Join(fmt.Errorf("run %d (job %d): %w", run.ID, jobID, ErrRunCancelled),
					rt.awaitEndSettled(ctx, jobID))
			}
		case errors.Is(err, state.ErrNotFound):
			if progress != nil {
				progress(Progress{JobID: jobID, State: "queued"})
			}
		default:
			return state.Run{}, err
		}
		job, jerr := rt.q.JobGet(ctx, jobID)
		if errors.Is(jerr, rivertype.ErrNotFound) {
			return run, fmt.Errorf("job %d: no such job", jobID)
		}
		if jerr != nil {
			return run, fmt.Errorf("read job %d: %w", jobID, jerr)
		}
		switch job.State {
		case rivertype.JobStateCancelled:
			if run.ID == 0 {
				return run, fmt.Errorf("job %d: %w before it started", jobID, ErrRunCancelled)
			}
		case rivertype.JobStateDiscarded:
			return run, fmt.Errorf("job %d: %w after %d attempts: %s", jobID, ErrRunFailed, job.Attempt, run.Error)
		}
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-t.C:
		case <-ended: // a run of this process ended: perhaps this one
		}
	}
}

// awaitJobSettled waits until River has recorded the end of a job whose run has ended. The
// run's state is written by the worker before it returns to River, and River records the
// job's end asynchronously (within tens of milliseconds): until then the job still counts as
// running, so queueing the same sync again right after Wait would be refused as already
// queued. It looks again after 5 ms, then twice as long each time, up to PollInterval.
func (rt *Runtime) awaitJobSettled(ctx context.Context, jobID int64) error {
	wait := 5 * time.Millisecond
	for {
		job, err := rt.q.JobGet(ctx, jobID)
		if errors.Is(err, rivertype.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read job %d: %w", jobID, err)
		}
		if job.State != rivertype.JobStateRunning {
			return nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		wait = min(2*wait, rt.cfg.PollInterval)
	}
}

// settleAfterFailure bounds the wait for River to record the end of a job whose run failed or
// was cancelled: the run's end is what the waiter reports, and the cause of a failure (a full
// disk) may keep River's completer from recording the job's for as long as it lasts.
const settleAfterFailure = 5 * time.Second

// awaitEndSettled is awaitJobSettled for a run that failed or was cancelled: it gives up
// quietly after settleAfterFailure, leaving the job's end to River.
func (rt *Runtime) awaitEndSettled(ctx context.Context, jobID int64) error {
	sctx, cancel := context.WithTimeout(ctx, settleAfterFailure)
	defer cancel()
	err := rt.awaitJobSettled(sctx, jobID)
	if ctx.Err() == nil && sctx.Err() != nil {
		return nil // the run's failure is the answer; River records the job's end when it can
	}
	return err
}

// workUnlessWorked starts working jobs in this process when neither this process nor a live
// worker of the database does, returning the function that stops it; otherwise it returns nil
// and the live worker the job is left to (following is the one it was left to before).
func (rt *Runtime) workUnlessWorked(ctx context.Context, jobID int64, following string) (func(bool) error, string) {
	rt.mu.Lock()
	working := rt.working
	rt.mu.Unlock()
	if working || rt.sinkErr != nil {
		return nil, following
	}
	w, live, err := rt.liveWorker(ctx)
	if err != nil {
		return nil, following // cannot tell now: look again at the next poll
	}
	if live {
		if w.ID != following {
			rt.log.InfoContext(ctx, "a worker is running: leaving the job to it", slog.Int64("job_id", jobID),
				slog.String("worker", w.ID))
		}
		return nil, w.ID
	}
	stop, err := rt.startWorking(ctx, false)
	if err != nil {
		return nil, following
	}
	rt.log.InfoContext(ctx, "no worker is running: working the job in this process", slog.Int64("job_id", jobID))
	return stop, ""
}
