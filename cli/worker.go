package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/config"
	"github.com/subsync/subsync/internal/runjson"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

// jobsConfig is the worker runtime's configuration, with this process's logger and version.
// needAPI: the command calls the service (it works jobs), so the credentials must be there.
func (a *app) jobsConfig(needAPI bool) (jobs.Config, error) {
	cfg, err := a.config()
	if err != nil {
		return jobs.Config{}, err
	}
	if cfg.Path == "" && cfg.Database.URL == "" {
		return jobs.Config{}, a.errNoConfig()
	}
	if needAPI {
		if err := cfg.CheckCredentials(); err != nil {
			return jobs.Config{}, err
		}
	}
	jc := cfg.JobsConfig()
	jc.Logger = a.log
	jc.Sink.Logger = a.log
	jc.Sink.Version = a.version
	return jc, nil
}

// runtime opens the queue and state database; the caller closes it.
func (a *app) runtime(ctx context.Context, needAPI bool) (*jobs.Runtime, error) {
	jc, err := a.jobsConfig(needAPI)
	if err != nil {
		return nil, err
	}
	rt, err := jobs.Open(ctx, jc)
	if err != nil {
		return nil, fmt.Errorf("open the job queue: %w", err)
	}
	return rt, nil
}

func (a *app) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the database (queue and state tables)",
		Long: `Create or upgrade the database: River's queue tables and subsync's own (run history,
rejects, suppression list, fingerprints). Every other command that uses the database does
this too on start; migrate does only this, for a deployment step. It is safe to run from
several machines at once.`,
		Example: `  subsync migrate
  SUBSYNC_DATABASE_URL=postgres://subsync@db/subsync subsync migrate`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			jc, err := a.jobsConfig(false)
			if err != nil {
				return err
			}
			if err := jobs.Migrate(cmd.Context(), jc); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			a.log.InfoContext(cmd.Context(), "database is up to date", slog.Any("database", a.cfg.Database))
			return nil
		}),
	}
}

func (a *app) runCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Run the worker: queued jobs, schedules, the pages, /metrics and /healthz",
		Long: `Run the long-lived worker: it works queued imports, syncs and status pulls, inserts the
scheduled ones (one elected leader per database, so a fleet runs each tick once), and
serves the pages (runs, rejects, syncs, suppression, health; see subsync ui), River UI under
/riverui/, the HTTP API under /api/v1 (tokens from subsync tokens; docs/api.md), /metrics and
/healthz on worker.metrics_address. On any address but loopback the
pages need a password (SUBSYNC_WEB_PASSWORD or web.password_file): without one, run exits 2.

On SIGINT or SIGTERM it stops taking jobs, lets batches in flight finish for up to
worker.shutdown_timeout, and exits 0; interrupted runs resume from their checkpoint on the
next start. A configuration error exits 2, so a service manager need not restart on it
(systemd: RestartPreventExitStatus=2).`,
		Example: `  subsync run
  subsync --config /etc/subsync/subsync.toml --log-format json run`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := a.config()
			if err != nil {
				return err
			}
			if err := a.checkPagesAddr(cfg.Worker.MetricsAddress); err != nil {
				return err
			}
			rt, err := a.runtime(ctx, true)
			if err != nil {
				return err
			}
			defer rt.Close()
			return a.runWorker(ctx, rt)
		}),
	}
}

func (a *app) syncCommand() *cobra.Command {
	var full, verify, wait, asJSON, allowRemovals bool
	var dry dryRunFlags
	cmd := &cobra.Command{
		Use:   "sync NAME",
		Short: "Queue a configured sync now (or plan it with --dry-run)",
		Long: `Queue the sync NAME of the configuration now, for a worker to run. A sync sends only rows
whose payload changed since the last acknowledged push (the rest count as unchanged; a
change of the mapping makes every row changed); --full sends every row (and reads a SQL
source from the start, ignoring its watermark). People who unsubscribed or bounced are never
pushed as active (see the sync's suppression policy). If the sync is already queued or
running, that job is reported (and waited for with --wait) instead.

--verify repairs a list the service lost: it reads the list in the service
(/subscribers/by_list) and sends the rows it lacks or holds with other values, whatever the
fingerprints say; the run's message says how many of each. A sync also does this on its own
(and warns) when the list holds fewer than half the active subscribers subsync sent to it,
and on the sync's verify_every schedule.

With --wait the command follows the run to its end, showing progress; a worker that is
running (subsync run, on any machine of the database) works it, and the command works it
itself only when none is; it exits 1 when the run fails.

With --dry-run nothing is queued or sent: the source is read, mapped and filtered here and
now, exactly as the run would, and the command prints how many rows would be sent (per
status), unchanged, suppressed, duplicates and rejected; --plan FILE writes one CSV line per
source row (line, sheet, email, action, status, status_mobile, code, column, value, reason).

A sync with removed = "unsubscribe" unsubscribes, after its rows, the people it delivered
before who are no longer in its source, unless more would go than its max_removals allows:
the run then fails before unsubscribing anyone and says how many would have gone.
--allow-removals lets this one run through. The dry run lists them (action "remove").`,
		Example: `  subsync sync newsletter-export
  subsync sync crm --full --wait
  subsync sync crm --verify --wait
  subsync sync crm --dry-run --plan plan.csv
  subsync sync crm --allow-removals --wait`,
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := dry.check(wait, asJSON); err != nil {
				return err
			}
			if verify && (full || dry.dryRun) {
				return usagef("--verify goes with neither --full (which sends every row) nor --dry-run")
			}
			cfg, err := a.config()
			if err != nil {
				return err
			}
			if !hasSync(cfg.Syncs, args[0]) {
				return usagef("no sync named %q in %s", args[0], configName(cfg.Path))
			}
			rt, err := a.runtime(ctx, wait || dry.dryRun)
			if err != nil {
				return err
			}
			defer rt.Close()
			if dry.dryRun {
				return a.dryRun(ctx, dry, asJSON, func(ctx context.Context, row func(jobs.PlanRow) error) (jobs.Plan, error) {
					return rt.PlanSyncArgs(ctx, jobs.SyncArgs{Name: args[0], Full: full, AllowRemovals: allowRemovals}, row)
				})
			}
			id, err := rt.EnqueueSyncArgs(ctx, jobs.SyncArgs{Name: args[0], Full: full, Verify: verify, AllowRemovals: allowRemovals})
			var notFull *jobs.FullNotQueuedError
			switch {
			case errors.As(err, &notFull):
				// The user asked for a run (--full, --verify, --allow-removals) that the run
				// already queued is not: say so and fail, rather than follow it.
				return err
			case errors.Is(err, jobs.ErrAlreadyQueued):
				a.log.WarnContext(ctx, "the sync is already queued or running: following that job", slog.String("sync", args[0]), slog.Int64("job_id", id))
				fmt.Fprintf(a.stderr, "sync %q is already queued or running as job %d: this request is folded into it\n", args[0], id)
			case err != nil:
				return err
			default:
				a.log.InfoContext(ctx, "sync queued", slog.String("sync", args[0]), slog.Int64("job_id", id), slog.Bool("full", full), slog.Bool("verify", verify))
			}
			return a.queued(ctx, rt, id, wait, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&full, "full", false, "send every row, ignoring what was pushed before")
	cmd.Flags().BoolVar(&allowRemovals, "allow-removals", false, "let this run unsubscribe more people who left the source than max_removals allows")
	cmd.Flags().BoolVar(&verify, "verify", false, "send the rows the service's list lacks or holds with other values")
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the run to its end (and work it here when no worker is running)")
	dry.add(cmd)
	jsonFlag(cmd, &asJSON)
	return cmd
}

func hasSync(syncs []config.Sync, name string) bool {
	for _, s := range syncs {
		if s.Name == name {
			return true
		}
	}
	return false
}

func configName(path string) string {
	if path == "" {
		return "the configuration"
	}
	return path
}

// queued reports a queued job, or with wait follows its run and prints the outcome.
func (a *app) queued(ctx context.Context, rt *jobs.Runtime, jobID int64, wait, asJSON bool) error {
	if !wait {
		if asJSON {
			return a.printJSON(map[string]int64{"job_id": jobID})
		}
		_, err := fmt.Fprintf(a.stdout, "job %d queued\n", jobID)
		return err
	}
	// Interrupted (Ctrl-C), the job this command queued must not stay behind: it is cancelled
	// (a queued one at once, a running one as soon as its worker, often this command, notices)
	// and the wait goes on until its run has ended, so that this command's own worker stops
	// with no job in hand. When the cancellation cannot be recorded (a full disk), the wait
	// ends at once: the job resumes under the next worker. A second Ctrl-C ends the process
	// at once (see main).
	waitCtx, stopWaiting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWaiting()
	cancelled := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
			err := rt.CancelJob(waitCtx, jobID)
			if err != nil {
				stopWaiting()
			}
			cancelled <- err
		case <-waitCtx.Done():
		}
	}()
	p := a.newProgress(ctx)
	run, err := rt.Wait(waitCtx, jobID, p.update)
	p.done()
	if ctx.Err() != nil {
		if cerr := <-cancelled; cerr != nil {
			return errors.Join(fmt.Errorf("interrupted; cancelling job %d: %w", jobID, cerr), err)
		}
		return fmt.Errorf("interrupted: job %d cancelled", jobID)
	}
	if run.ID != 0 {
		if perr := a.printRun(ctx, rt.State(), run, asJSON); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		return err
	}
	return nil
}

// The JSON of runs and jobs is runjson's, shared with the HTTP API.
type (
	runJSON      = runjson.Run
	countsJSON   = runjson.Counts
	jobJSON      = runjson.Job
	removalsJSON = runjson.Removals
)

var timePtr = runjson.TimePtr

func toRunJSON(r state.Run) runJSON { return runjson.FromRun(r) }

// shownWarnings is how many of a run's warnings printRun lists.
const shownWarnings = 10

// printRun prints one run with its counts, and its warnings: how many by code and, as text,
// the first shownWarnings with their line, column and reason.
func (a *app) printRun(ctx context.Context, store *state.Store, r state.Run, asJSON bool) error {
	st, err := runjson.ReadStory(ctx, store, r)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(runjson.Detail(r, st))
	}
	warnings, story := st.Warnings, story{st}
	pairs := []any{
		"run", r.ID, "job", r.JobID, "kind", r.Kind, "name", r.Name,
	}
	if r.ListID != 0 {
		pairs = append(pairs, "list", r.ListID)
	}
	if r.Source != "" {
		pairs = append(pairs, "source", r.Source)
	}
	pairs = append(pairs, "state", r.State)
	if r.Error != "" {
		label := "error"
		if r.State == state.RunCompleted {
			label = "note" // what a completed run reports: a verification's difference, an erasure's audit line, a failed write-back
		}
		pairs = append(pairs, label, r.Error)
	}
	for _, f := range jobs.DescribeRun(r).Facts {
		pairs = append(pairs, f.Label, f.Value)
	}
	pairs = append(pairs, story.pairs(r)...)
	if !r.RejectsPrunedAt.IsZero() {
		pairs = append(pairs, "rejects", "deleted on "+formatTime(r.RejectsPrunedAt)+" by the retention policy (retention.rejects); the counts stay")
	}
	pairs = append(pairs,
		"attempts", r.Attempts, "started", formatTime(r.StartedAt), "finished", formatTime(r.FinishedAt),
		"duration", r.Duration().Round(time.Millisecond),
	)
	codes := slices.Sorted(maps.Keys(warnings))
	var total int64
	byCode := make([]string, len(codes))
	for i, code := range codes {
		total += warnings[code]
		byCode[i] = fmt.Sprintf("%s %d", code, warnings[code])
	}
	if total > 0 {
		pairs = append(pairs, "warnings", fmt.Sprintf("%d (%s), values dropped from rows that were sent", total, strings.Join(byCode, ", ")))
	}
	if err := a.fields(pairs...); err != nil {
		return err
	}
	if err := a.printRejects(ctx, store, r); err != nil || total == 0 {
		return err
	}
	shown := 0
	errEnough := errors.New("enough")
	err = store.Warnings(ctx, r.ID, func(w state.Reject) error {
		if shown == shownWarnings {
			return errEnough
		}
		shown++
		where := fmt.Sprintf("line %d", w.Line)
		if w.Sheet != "" {
			where = fmt.Sprintf("sheet %q row %d", w.Sheet, w.Line)
		}
		_, err := fmt.Fprintf(a.stdout, "  %s column %q: %s: %s (the value was not sent)\n", where, w.Column, w.Code, w.Reason)
		return err
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	if total > int64(shown) {
		_, err = fmt.Fprintf(a.stdout, "  … %d more: subsync runs %d --rejects FILE lists every one\n", total-int64(shown), r.ID)
	}
	return err
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format(time.DateTime)
}
