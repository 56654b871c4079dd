package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
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
	// Verify compares the list in the service with the source instead of the fingerprints:
	// it sends the rows the service lacks or holds with other values (see verifyNote).
	Verify bool `json:"verify,omitempty"`
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

// EnqueueVerify queues the named sync now as a verifying run (SyncArgs.Verify). If that sync
// is already queued or running, it returns that job's id with an error wrapping
// ErrAlreadyQueued; a *FullNotQueuedError when that job does not verify.
func (rt *Runtime) EnqueueVerify(ctx context.Context, name string) (int64, error) {
	return rt.EnqueueSyncArgs(ctx, SyncArgs{Name: name, Verify: true})
}

// EnqueueSyncArgs is EnqueueSync with every argument of the job: a request for Full,
// Verify or AllowRemovals while a run without it is queued or running is not folded into
// that run either (a *FullNotQueuedError naming the flag).
func (rt *Runtime) EnqueueSyncArgs(ctx context.Context, args SyncArgs) (int64, error) {
	name := args.Name
	if _, ok := rt.cfg.sync(name); !ok {
		return 0, fmt.Errorf("sync %q is not in the configuration", name)
	}
	res, err := rt.q.Insert(ctx, args, nil)
	if err != nil {
		return 0, fmt.Errorf("queue sync %q: %w", name, err)
	}
	if res.UniqueSkippedAsDuplicate {
		var existing SyncArgs
		if json.Unmarshal(res.Job.EncodedArgs, &existing) == nil {
			e := &FullNotQueuedError{Name: name, JobID: res.Job.ID, Running: res.Job.State == rivertype.JobStateRunning}
			switch {
			case args.Full && !existing.Full:
				e.Flag = "--full"
			case args.Verify && !existing.Verify:
				e.Flag = "--verify"
			case args.AllowRemovals && !existing.AllowRemovals:
				e.Flag = "--allow-removals"
			}
			if e.Flag != "" {
				return res.Job.ID, e
			}
		}
		return res.Job.ID, fmt.Errorf("sync %q is %w as job %d", name, ErrAlreadyQueued, res.Job.ID)
	}
	return res.Job.ID, nil
}

// FullNotQueuedError is EnqueueSync's error for a full sync asked for while a delta run of
// the same sync is queued or running: one run per sync at a time, so the full run was not
// queued, and the delta run will not send unchanged rows. It is also ErrAlreadyQueued.
// The same holds for a verifying run (Flag "--verify") or one allowed to remove past the
// guard ("--allow-removals") asked for while a run without that flag is queued or running.
type FullNotQueuedError struct {
	Name    string
	Flag    string // the flag not queued: "--full" ("" too), "--verify" or "--allow-removals"
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
		verify := job.Args.Verify
		var load *background[*state.FingerprintSet] // a delta sync's fingerprints, loading meanwhile
		defer func() {
			if load != nil {
				releaseFingerprints(load)
			}
		}()
		stream := streamSpec{source: spec.Source, listID: spec.ListID, mapping: spec.Mapping,
			suppression: spec.Suppression, sync: spec.Name, removed: spec.Removed, maxRemovals: spec.MaxRemovals,
			allowRemovals: job.Args.AllowRemovals}
		if !verify && !job.Args.Full {
			load = rt.loadFingerprints(ctx, spec.ListID)
			if !isSQL(spec.Source) {
				// The file opens meanwhile (an SQL source's query may depend on the watermark).
				stream.opening = openSource(ctx, stream.sourceConfig())
				defer closeSource(stream.opening)
			}
			note, err := rt.listShrunk(ctx, spec.ListID, load)
			if err != nil {
				return err
			}
			if note != "" {
				releaseFingerprints(load)
				load = nil
				a.log.WarnContext(ctx, "the list in the service is far smaller than what subsync sent to it: verifying instead",
					slog.Int64("list_id", spec.ListID), slog.String("note", note))
				// The fingerprints are wrong: dropped, so that a retried attempt of this run
				// (which may no longer find the list small) sends what is still missing too.
				if err := rt.store.ForgetFingerprints(ctx, spec.ListID); err != nil {
					return err
				}
				a.warning = note
				verify = true
			}
		}
		src := spec.Source
		watermarkKey := "sync:" + spec.Name
		incremental := src.WatermarkColumn != "" && isSQL(src)
		if incremental && !job.Args.Full && !verify {
			wm, err := rt.store.Watermark(ctx, watermarkKey)
			if err != nil {
				return err
			}
			src.Watermark = wm
		}
		stream.source, stream.delta, stream.verify, stream.fps = src, !job.Args.Full && !verify, verify, load
		wm, err := rt.stream(ctx, a, stream)
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

// shrinkShare: a delta sync verifies instead (see listShrunk) when the service's list holds
// fewer active subscribers than 1/shrinkShare of those subsync believes it holds.
const shrinkShare = 2

// listShrunk says why a delta sync of the list should verify instead, or "" when it need not:
// the service's list holds far fewer active subscribers (GET /subscriberlists/{id}) than
// subsync's fingerprints of it, minus its suppressions, say it should (fewer than half), as
// when the list was emptied behind subsync's back; the fingerprints would report every row
// unchanged. A list whose rows were mostly sent as unsubscribed also looks smaller: it is then
// verified (read once more) on every sync, sending nothing it holds.
func (rt *Runtime) listShrunk(ctx context.Context, listID int64, load *background[*state.FingerprintSet]) (string, error) {
	if rt.sinkErr != nil {
		return "", nil // the run fails with the client's error
	}
	set, err := load.wait(ctx)
	if err != nil || set.Len() == 0 {
		return "", err
	}
	fps := int64(set.Len())
	counts, err := rt.store.SuppressionCounts(ctx)
	if err != nil {
		return "", err
	}
	expected := fps
	for _, c := range counts {
		if c.ListID == listID || c.ListID == state.AllLists {
			expected -= c.Count
		}
	}
	l, err := rt.sink.List(ctx, listID)
	if err != nil {
		return "", nil // checkList fails the run with its reason
	}
	if expected <= 0 || int64(l.SubscriberEmails)*shrinkShare >= expected {
		return "", nil
	}
	return fmt.Sprintf("the list holds %d active subscribers where subsync sent %d: verified against the service's list instead of the fingerprints",
		l.SubscriberEmails, expected), nil
}
