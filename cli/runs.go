package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/internal/export"
	"github.com/subsync/subsync/internal/runjson"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

var runStates = []state.RunState{
	state.RunRunning, state.RunRetrying, state.RunInterrupted, state.RunCompleted, state.RunFailed, state.RunCancelled,
}

func (a *app) runsCommand() *cobra.Command {
	var (
		asJSON             bool
		limit              int
		kind, name, stateF string
		rejects, format    string
		removed            bool
	)
	cmd := &cobra.Command{
		Use:   "runs [ID]",
		Short: "Run history; one run in detail; its rejects as CSV or XLSX",
		Long: `Without ID, list the latest runs, newest first. With ID, show that run (with the
values it dropped from rows it sent, under on_invalid = "drop"), and with --rejects FILE
write the rows it did not send ("-" for standard output): each row whole, under the
source's own header, followed by the columns subsync:kind, subsync:line, subsync:column,
subsync:code and subsync:reason (a row with several problems lists them all, joined with
"; "); then the rows sent with a value dropped (kind "warning").

The file opens in a spreadsheet as it stands: CSV in UTF-8 with a byte-order mark, its
fields separated as the source file's were (a semicolon file gives a semicolon export),
cells a spreadsheet would run as a formula quoted; or a workbook with --format xlsx (or a
FILE ending in .xlsx). Standard output gets the same CSV without the byte-order mark, for
scripts. Fix the rows in a spreadsheet and import the file again: subsync ignores its
subsync: columns and takes the quoting away.

With --removed, list whom a sync run unsubscribed: each address, why (it left the source, or
its key came with a new address: "moved", with the new one); --json gives them as an array.`,
		Example: `  subsync runs
  subsync runs --kind sync --name crm --limit 10 --json
  subsync runs 42
  subsync runs 42 --rejects rejects.csv
  subsync runs 42 --rejects rejects.xlsx
  subsync runs 42 --rejects - | wc -l
  subsync runs 57 --removed
  subsync import rejects.csv --list 7 --wait   # after fixing the rows`,
		Args: cobra.MaximumNArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) == 0 && rejects != "" {
				return usagef("--rejects needs the id of a run")
			}
			if len(args) == 0 && removed {
				return usagef("--removed needs the id of a run")
			}
			if removed && rejects != "" {
				return usagef("give --removed or --rejects, not both")
			}
			opts := export.Options{Format: export.FormatOf(rejects), NoBOM: rejects == "-"}
			if format != "" {
				if rejects == "" {
					return usagef("--format goes with --rejects FILE")
				}
				f, err := export.ParseFormat(format)
				if err != nil {
					return usagef("--%v", err)
				}
				opts.Format = f
			}
			if rejects == "-" && opts.Format == export.XLSX && a.isTerminal(a.stdout) {
				return usagef("--format xlsx writes a workbook: give --rejects a file name, or send standard output to a file")
			}
			if limit < 1 {
				return usagef("--limit %d: want 1 or more", limit)
			}
			f := state.RunFilter{Kind: kind, Name: name, Limit: limit}
			switch kind {
			case "", state.KindImport, state.KindSync, state.KindStatusPull, state.KindForget:
			default:
				return usagef("--kind %q: want import, sync, status_pull or forget", kind)
			}
			if stateF != "" {
				if !slices.Contains(runStates, state.RunState(stateF)) {
					return usagef("--state %q: want running, retrying, interrupted, completed, failed or cancelled", stateF)
				}
				f.States = []state.RunState{state.RunState(stateF)}
			}
			rt, err := a.runtime(ctx, false)
			if err != nil {
				return err
			}
			defer rt.Close()
			store := rt.State()

			if len(args) == 0 {
				runs, err := store.Runs(ctx, f)
				if err != nil {
					return fmt.Errorf("read run history: %w", err)
				}
				if asJSON {
					out := make([]runJSON, len(runs))
					for i, r := range runs {
						out[i] = toRunJSON(r)
					}
					return a.printJSON(out)
				}
				t := a.table("RUN", "JOB", "KIND", "NAME", "LIST", "STATE", "STARTED", "DURATION", "WHAT IT DID")
				for _, r := range runs {
					list := ""
					if r.ListID != 0 {
						list = fmt.Sprint(r.ListID)
					}
					t.row(r.ID, r.JobID, r.Kind, r.Name, list, r.State, formatTime(r.StartedAt), formatDuration(r.Duration()),
						jobs.DescribeRun(r).Summary())
				}
				return t.flush()
			}

			id, err := parseID("run id", args[0])
			if err != nil {
				return err
			}
			run, err := store.Run(ctx, id)
			if errors.Is(err, state.ErrNotFound) {
				return fmt.Errorf("run %d: no such run", id)
			}
			if err != nil {
				return fmt.Errorf("read run %d: %w", id, err)
			}
			if removed {
				return a.printRemoved(ctx, store, run, asJSON)
			}
			if rejects == "" {
				return a.printRun(ctx, store, run, asJSON)
			}
			if !run.RejectsPrunedAt.IsZero() {
				return fmt.Errorf("run %d: its rejected rows were deleted on %s by the retention policy (retention.rejects)",
					id, formatTime(run.RejectsPrunedAt))
			}
			var w io.Writer = a.stdout
			var file *os.File
			if rejects != "-" {
				if file, err = os.Create(rejects); err != nil {
					return fmt.Errorf("export rejects: %w", err)
				}
				w = file
			}
			err = export.Rejects(ctx, store, id, w, opts)
			if file != nil {
				if cerr := file.Close(); cerr != nil && err == nil {
					err = fmt.Errorf("export rejects: %w", cerr)
				}
			}
			if err != nil {
				return fmt.Errorf("export the rejects of run %d: %w", id, err)
			}
			if file != nil {
				a.log.InfoContext(ctx, "rejects exported", slog.Int64("run_id", id), slog.Int64("rejected", run.Counts.Rejected),
					slog.String("file", rejects), slog.String("format", opts.Format))
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.IntVar(&limit, "limit", 20, "how many runs to list")
	fl.StringVar(&kind, "kind", "", "only runs of this kind: import, sync, status_pull or forget")
	fl.StringVar(&name, "name", "", "only runs of this sync (or imported file name)")
	fl.StringVar(&stateF, "state", "", "only runs in this state: running, retrying, interrupted, completed, failed or cancelled")
	fl.StringVar(&rejects, "rejects", "", `write the run's rejects to this file ("-": standard output, CSV without a byte-order mark)`)
	fl.BoolVar(&removed, "removed", false, "list whom the run unsubscribed: who left the source, and old addresses of changed keys")
	fl.StringVar(&format, "format", "", "the rejects export's format: csv or xlsx (default: xlsx for a FILE ending in .xlsx, else csv)")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func (a *app) jobsCommand() *cobra.Command {
	cmd := group("jobs", "The job queue: what is queued or running; cancel a job", `  subsync jobs ls
  subsync jobs cancel 57`)

	var asJSON bool
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List queued and running jobs, oldest first",
		Example: `  subsync jobs ls
  subsync jobs ls --json`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.runtime(ctx, false)
			if err != nil {
				return err
			}
			defer rt.Close()
			list, err := rt.Jobs(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]jobJSON, len(list))
				for i, j := range list {
					out[i] = runjson.FromJob(j)
				}
				return a.printJSON(out)
			}
			t := a.table("JOB", "KIND", "NAME", "LIST", "STATE", "ATTEMPT", "SCHEDULED", "LAST ERROR")
			for _, j := range list {
				listID := ""
				if j.ListID != 0 {
					listID = fmt.Sprint(j.ListID)
				}
				t.row(j.ID, j.Kind, j.Name, listID, j.State, fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts),
					formatTime(j.ScheduledAt), j.LastError)
			}
			return t.flush()
		}),
	}
	jsonFlag(ls, &asJSON)

	cancel := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a queued or running job",
		Long: `Cancel a job: a queued one at once, a running one as soon as its worker notices. Rows
already acknowledged by the service stay sent; the run is recorded as cancelled.`,
		Example: `  subsync jobs cancel 57`,
		Args:    cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, err := parseID("job id", args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			rt, err := a.runtime(ctx, false)
			if err != nil {
				return err
			}
			defer rt.Close()
			if err := rt.CancelJob(ctx, id); err != nil {
				return err
			}
			a.log.InfoContext(ctx, "job cancelled", slog.Int64("job_id", id))
			return nil
		}),
	}
	cmd.AddCommand(ls, cancel)
	return cmd
}

// formatDuration shows a run's duration to the millisecond under a minute ("0.342s",
// "12.5s"), to the second above.
func formatDuration(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
