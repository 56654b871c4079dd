package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/subsync/subsync/state"
)

// KindPrune is the job kind of the scheduled pruning (Config.Retention).
const KindPrune = "prune"

// Defaults of RetentionSpec.
const (
	RetentionRejectsDefault   = 90 * 24 * time.Hour
	RetentionRunsDefault      = 365 * 24 * time.Hour
	RetentionStatusLogDefault = 365 * 24 * time.Hour
)

// RetentionSpec is how long subsync keeps what it records, and when it prunes the rest (see
// state.PrunePolicy). The suppression list and the keyed hashes of erased people are never
// pruned. River deletes its own finished jobs on its own settings: completed and cancelled
// ones after 24 hours, discarded ones after 7 days; run history keeps what they did.
type RetentionSpec struct {
	// Rejects, Runs and StatusLog are how long a run's rejects (with its warnings and
	// removals), whole runs, and the status change log are kept; 0 = the default
	// (RetentionRejectsDefault, …), negative = for ever.
	Rejects, Runs, StatusLog time.Duration
	// Schedule, in TimeZone, is when the pruning job runs; empty = only on demand
	// (Runtime.Prune, subsync prune).
	Schedule, TimeZone string
}

// PruneArgs are the arguments of the pruning job.
type PruneArgs struct{}

// Kind is the job kind.
func (PruneArgs) Kind() string { return KindPrune }

// InsertOpts keep at most one pruning queued or running.
func (PruneArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}}
}

// PruneWorker works pruning jobs. A pruning is not a run: it changes no list and has no
// books; what it deleted is in the log.
type PruneWorker struct {
	river.WorkerDefaults[PruneArgs]
	rt *Runtime
}

// Timeout bounds one pruning.
func (w *PruneWorker) Timeout(*river.Job[PruneArgs]) time.Duration { return 30 * time.Minute }

// Work prunes what the retention policy no longer keeps.
func (w *PruneWorker) Work(ctx context.Context, _ *river.Job[PruneArgs]) error {
	_, err := w.rt.Prune(ctx, false)
	return err
}

// RetentionPolicy is the policy of the configuration, defaults filled.
func (rt *Runtime) RetentionPolicy() state.PrunePolicy {
	r := rt.cfg.Retention
	return state.PrunePolicy{Rejects: r.Rejects, Runs: r.Runs, StatusLog: r.StatusLog}
}

// Prune deletes what the retention policy no longer keeps (see state.Store.Prune); with
// dryRun it only says what would go.
func (rt *Runtime) Prune(ctx context.Context, dryRun bool) (state.Pruned, error) {
	p, err := rt.store.Prune(ctx, rt.RetentionPolicy(), time.Now(), dryRun)
	if err != nil || dryRun {
		return p, err
	}
	rt.log.InfoContext(ctx, "pruned by the retention policy", slog.Int64("rejects", p.Rejects), slog.Int64("warnings", p.Warnings),
		slog.Int64("removals", p.Removals), slog.Int("runs_touched", len(p.Runs)), slog.Int64("runs_deleted", p.WholeRuns),
		slog.Int64("status_changes", p.StatusChanges), slog.Int64("write_backs", p.WriteBacks))
	return p, nil
}
