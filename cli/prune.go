package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/config"
	"github.com/subsync/subsync/state"
)

func (a *app) pruneCommand() *cobra.Command {
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Delete what the retention policy no longer keeps (--dry-run lists it)",
		Long: `Delete what [retention] no longer keeps: the rejected rows (whole source rows), warnings
and unsubscribed addresses of runs that finished more than retention.rejects ago (90 days;
the runs keep their counts), runs that finished more than retention.runs ago (a year), and
status changes older than retention.status_log (a year) whose write-back is not pending.
The worker does the same on retention.schedule (daily). --dry-run lists the runs touched and
counts what would go, deleting nothing.

Never pruned: the suppression list (it keeps people who left from being made active again)
and the keyed hashes of erased people (they keep them erased). River deletes its own finished
jobs itself (completed and cancelled ones after 24 hours, discarded ones after 7 days).`,
		Example: `  subsync prune --dry-run
  subsync prune
  subsync prune --dry-run --json`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.runtime(ctx, false)
			if err != nil {
				return err
			}
			defer rt.Close()
			p, err := rt.Prune(ctx, dryRun)
			if err != nil {
				return fmt.Errorf("prune: %w", err)
			}
			if asJSON {
				return a.printJSON(toPruneJSON(p, dryRun))
			}
			return a.printPruned(rt.RetentionPolicy(), p, dryRun)
		}),
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted, deleting nothing")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// keptFor says a retention period in words with its cutoff: "90d (finished before …)".
func keptFor(keep time.Duration, before time.Time) string {
	if keep <= 0 || before.IsZero() {
		return "for ever"
	}
	return fmt.Sprintf("%s (before %s)", config.Period(keep), formatTime(before))
}

func (a *app) printPruned(pol state.PrunePolicy, p state.Pruned, dryRun bool) error {
	if err := a.fields("rejects, warnings, removals kept", keptFor(pol.Rejects, p.RejectsBefore),
		"runs kept", keptFor(pol.Runs, p.RunsBefore), "status changes kept", keptFor(pol.StatusLog, p.StatusLogBefore),
		"never pruned", "the suppression list, the keyed hashes of erased people"); err != nil {
		return err
	}
	if len(p.Runs) > 0 {
		fmt.Fprintln(a.stdout)
		t := a.table("RUN", "KIND", "NAME", "FINISHED", "REJECTS", "WARNINGS", "REMOVALS", "WHAT GOES")
		for _, r := range p.Runs {
			what := "its rejects, warnings and removals"
			if r.Whole {
				what = "the whole run"
			}
			t.row(r.ID, r.Kind, r.Name, formatTime(r.FinishedAt), r.Rejects, r.Warnings, r.Removals, what)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	verb := "deleted"
	if dryRun {
		verb = "dry run, nothing was deleted; subsync prune would delete"
	}
	_, err := fmt.Fprintf(a.stdout, "\n%s %d rejects, %d warnings and %d removals of %d runs, %d whole runs, and %d status changes (with %d write-backs)\n",
		verb, p.Rejects, p.Warnings, p.Removals, len(p.Runs), p.WholeRuns, p.StatusChanges, p.WriteBacks)
	return err
}

type pruneJSON struct {
	DryRun          bool             `json:"dry_run"`
	RejectsBefore   *time.Time       `json:"rejects_before,omitempty"`
	RunsBefore      *time.Time       `json:"runs_before,omitempty"`
	StatusLogBefore *time.Time       `json:"status_log_before,omitempty"`
	Runs            []prunedRunJSON  `json:"runs"`
	Totals          map[string]int64 `json:"totals"`
}

type prunedRunJSON struct {
	ID         int64     `json:"id"`
	Kind       string    `json:"kind"`
	Name       string    `json:"name"`
	FinishedAt time.Time `json:"finished_at"`
	Rejects    int64     `json:"rejects"`
	Warnings   int64     `json:"warnings"`
	Removals   int64     `json:"removals"`
	Whole      bool      `json:"whole"`
}

func toPruneJSON(p state.Pruned, dryRun bool) pruneJSON {
	out := pruneJSON{DryRun: dryRun, RejectsBefore: timePtr(p.RejectsBefore), RunsBefore: timePtr(p.RunsBefore),
		StatusLogBefore: timePtr(p.StatusLogBefore), Runs: []prunedRunJSON{},
		Totals: map[string]int64{"rejects": p.Rejects, "warnings": p.Warnings, "removals": p.Removals,
			"whole_runs": p.WholeRuns, "status_changes": p.StatusChanges, "write_backs": p.WriteBacks}}
	for _, r := range p.Runs {
		out.Runs = append(out.Runs, prunedRunJSON{r.ID, r.Kind, r.Name, r.FinishedAt, r.Rejects, r.Warnings, r.Removals, r.Whole})
	}
	return out
}
