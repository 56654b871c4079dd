package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/subsync/subsync/sources"
)

// activeStates are the job states in which a sync or status pull counts as queued or
// running: unique options allow one such job per sync name (or one status pull).
var activeStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}

// ErrAlreadyQueued is returned (with the id of the existing job) when a sync or status pull
// is queued while one is already queued or running.
var ErrAlreadyQueued = errors.New("already queued or running")

// SyncArgs are the arguments of a sync job: the name of a sync in the worker's
// configuration, which holds its source, list and mapping.
type SyncArgs struct {
	Name string `json:"name" river:"unique"`
	// Full sends every row, ignoring the delta fingerprints (and a SQL watermark).
	Full bool `json:"full,omitempty"`
	// AllowRemovals lets this run unsubscribe more people who left the source than the
	// sync's max_removals allows (one run; a schedule never sets it).
	AllowRemovals bool `json:"allow_removals,omitempty"`
}

// Kind is the job kind.
func (SyncArgs) Kind() string { return KindSync }

// InsertOpts keep at most one queued or running job per sync name.
func (SyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}}
}

// EnqueueSync queues the named sync now. If that sync is already queued or running, it
// returns that job's id with an error wrapping ErrAlreadyQueued: the request is folded into
// that job, unless it asks for a full run and that job is a delta run, when the error is a
// *FullNotQueuedError.
func (rt *Runtime) EnqueueSync(ctx context.Context, name string, full bool) (int64, error) {
	return rt.EnqueueSyncArgs(ctx, SyncArgs{Name: name, Full: full})
}

// EnqueueSyncArgs is EnqueueSync with every argument of the job: a request for
// AllowRemovals while a run without it is queued or running is not folded into that run
// either (a *FullNotQueuedError saying so).
func (rt *Runtime) EnqueueSyncArgs(ctx context.Context, args SyncArgs) (int64, error) {
	name, full := args.Name, args.Full
	if _, ok := rt.cfg.sync(name); !ok {
		return 0, fmt.Errorf("sync %q is not in the configuration", name)
	}
	res, err := rt.q.Insert(ctx, args, nil)
	if err != nil {
		return 0, fmt.Errorf("queue sync %q: %w", name, err)
	}
	if res.UniqueSkippedAsDuplicate {
		var existing SyncArgs
		if json.Unmarshal(res.Job.EncodedArgs, &existing) == nil &&
			(full && !existing.Full || args.AllowRemovals && !existing.AllowRemovals) {
			flag := "--full"
			if !full || existing.Full {
				flag = "--allow-removals"
			}
			return res.Job.ID, &FullNotQueuedError{Name: name, JobID: res.Job.ID, Running: res.Job.State == rivertype.JobStateRunning,
				Flag: flag}
		}
		return res.Job.ID, fmt.Errorf("sync %q is %w as job %d", name, ErrAlreadyQueued, res.Job.ID)
	}
	return res.Job.ID, nil
}

// FullNotQueuedError is EnqueueSync's error for a full sync asked for while a delta run of
// the same sync is queued or running: one run per sync at a time, so the full run was not
// queued, and the delta run will not send unchanged rows. It is also ErrAlreadyQueued.
type FullNotQueuedError struct {
	Name    string
	Flag    string // the flag not queued: "--full" ("" too) or "--allow-removals"
	JobID   int64  // the delta run's job
	Running bool   // running, else queued
}

func (e *FullNotQueuedError) Error() string {
	state := "queued"
	if e.Running {
		state = "running"
	}
	flag, what := cmp.Or(e.Flag, "--full"), "a delta run"
	if flag != "--full" {
		what = "a run without " + flag
	}
	return fmt.Sprintf("sync %q %s was not queued: %s of it is %s as job %d, and a sync runs once at a time; "+
		"run it with %s again when job %d has ended", e.Name, flag, what, state, e.JobID, flag, e.JobID)
}

// Is makes the error ErrAlreadyQueued.
func (e *FullNotQueuedError) Is(target error) bool { return target == ErrAlreadyQueued }

// SyncWorker works sync jobs.
type SyncWorker struct {
	river.WorkerDefaults[SyncArgs]
	rt *Runtime
}

// Timeout: a sync runs as long as it needs; a dead worker is detected by its lease.
func (w *SyncWorker) Timeout(*river.Job[SyncArgs]) time.Duration { return -1 }

// Work runs the sync: rows whose payload is unchanged since the last push are skipped
// unless Full; an incremental SQL source reads from its watermark.
func (w *SyncWorker) Work(ctx context.Context, job *river.Job[SyncArgs]) error {
	rt := w.rt
	spec, ok := rt.cfg.sync(job.Args.Name)
	d := runDesc{kind: KindSync, name: job.Args.Name, listID: spec.ListID, source: spec.Source.Path}
	if spec.Source.Path == "" && spec.Source.Query != "" {
		d.source = "sql: " + spec.Source.Query
	}
	return rt.work(ctx, job.JobRow, d, func(ctx context.Context, a *attempt) error {
		if !ok {
			return permanent(fmt.Errorf("sync %q is not in this worker's configuration", job.Args.Name))
		}
		src := spec.Source
		watermarkKey := "sync:" + spec.Name
		incremental := src.WatermarkColumn != "" && isSQL(src)
		if incremental && !job.Args.Full {
			wm, err := rt.store.Watermark(ctx, watermarkKey)
			if err != nil {
				return err
			}
			src.Watermark = wm
		}
		wm, err := rt.stream(ctx, a, streamSpec{source: src, listID: spec.ListID, mapping: spec.Mapping,
			suppression: spec.Suppression, delta: !job.Args.Full, sync: spec.Name, removed: spec.Removed,
			maxRemovals: spec.MaxRemovals, allowRemovals: job.Args.AllowRemovals})
		var stopped *RemovalsStoppedError
		if err != nil && spec.Removed == RemovedUnsubscribe && !errors.Is(err, errInterrupted) && !errors.As(err, &stopped) {
			return fmt.Errorf("%w (nobody was removed: only a complete read of the source removes people)", err)
		}
		if err != nil {
			return err
		}
		if incremental && wm != "" {
			return rt.store.SetWatermark(ctx, watermarkKey, wm)
		}
		return nil
	})
}

func isSQL(src sources.Config) bool {
	return src.Kind == sources.KindSQL || src.Kind == "" && src.Path == "" && src.Query != ""
}
