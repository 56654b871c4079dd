package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/internal/runjson"
	"github.com/subsync/subsync/jobs"
)

// dryRunFlags are the flags of a command that can plan instead of queueing: --dry-run and
// --plan FILE.
type dryRunFlags struct {
	dryRun bool
	plan   string
}

func (f *dryRunFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", false, "send nothing: read, map and filter the source here and now, and print what a run would do")
	fl.StringVar(&f.plan, "plan", "", `with --dry-run: write the plan of every row as CSV to this file ("-": standard output)`)
}

// check refuses flags that do not go with a dry run.
func (f *dryRunFlags) check(wait, asJSON bool) error {
	switch {
	case f.plan != "" && !f.dryRun:
		return usagef("--plan needs --dry-run")
	case f.dryRun && wait:
		return usagef("--dry-run runs here and now and queues nothing: drop --wait")
	case f.plan == "-" && asJSON:
		return usagef("--plan - writes the plan to standard output: drop --json (the summary goes to standard error)")
	}
	return nil
}

// planJSON is a dry run's summary as --json prints it (runjson's, shared with the API).
type planJSON = runjson.Plan

// dryRun runs plan, writing every row to the --plan CSV when asked, and prints the summary:
// on standard output, or on standard error when the plan itself goes to standard output.
func (a *app) dryRun(ctx context.Context, f dryRunFlags, asJSON bool,
	plan func(ctx context.Context, row func(jobs.PlanRow) error) (jobs.Plan, error)) error {
	var row func(jobs.PlanRow) error
	var pw *jobs.PlanCSV
	var file *os.File
	summary := a.stdout
	switch f.plan {
	case "":
	case "-":
		pw = jobs.NewPlanCSV(a.stdout)
		summary = a.stderr
	default:
		var err error
		if file, err = os.Create(f.plan); err != nil {
			return fmt.Errorf("write the plan: %w", err)
		}
		defer file.Close()
		pw = jobs.NewPlanCSV(file)
	}
	if pw != nil {
		row = pw.Write
	}
	p, err := plan(ctx, row)
	if err != nil {
		return fmt.Errorf("dry run: %w", err)
	}
	if pw != nil {
		if err := pw.Flush(); err != nil {
			return err
		}
	}
	if file != nil {
		if err := file.Close(); err != nil {
			return fmt.Errorf("write the plan: %w", err)
		}
	}
	if asJSON {
		j := runjson.FromPlan(p)
		j.PlanFile = f.plan
		return a.printJSON(j)
	}
	return printPlan(summary, p, f.plan)
}

// printPlan writes a dry run's summary as aligned name/value lines.
func printPlan(w io.Writer, p jobs.Plan, planFile string) error {
	c := p.Counts
	t := newTable(w)
	t.row("dry run:", "nothing was sent")
	t.row("rows read:", c.Read)
	t.row("would send:", fmt.Sprintf("%d%s", c.Sent, breakdown(p.ByStatus, func(k string) string {
		if k == "" {
			return "without a status"
		}
		return "status=" + k
	})))
	t.row("unchanged:", c.Unchanged)
	t.row("suppressed:", c.Suppressed)
	t.row("duplicates:", c.Duplicates)
	t.row("rejected:", fmt.Sprintf("%d%s", c.Rejected, breakdown(p.RejectsByCode, func(k string) string { return k })))
	if c.Removed > 0 || p.RemovalsStopped != "" {
		t.row("would unsubscribe:", c.Removed)
	}
	if p.RemovalsStopped != "" {
		t.row("removals:", p.RemovalsStopped)
	}
	if planFile != "" && planFile != "-" {
		t.row("plan:", planFile)
	}
	return t.flush()
}

// breakdown formats counts by key as " (k1 n1, k2 n2)", biggest first; "" when empty.
func breakdown(m map[string]int64, label func(string) string) string {
	if len(m) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(x, y string) int { return cmp.Compare(m[y], m[x]) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", label(k), m[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
