package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/internal/runjson"
	"github.com/subsync/subsync/jobs"
)

// scheduleJSON is a schedule as `schedules --json` prints it (runjson's, shared with the API).
type scheduleJSON = runjson.Schedule

func (a *app) schedulesCommand() *cobra.Command {
	var count int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "Print every schedule (syncs and the status pull) with its next run times",
		Long: `Print every configured sync and the status pull with its schedule, time zone and next
run times, computed as the worker computes them (cron specs and descriptors, read in the
schedule's time zone: "30 2 * * *" in Europe/Oslo is 02:30 Oslo time, summer and winter).
Times are shown in the schedule's time zone. A sync without a schedule runs on demand only.
Needs neither the database nor the service.`,
		Example: `  subsync schedules
  subsync schedules --count 5 --json`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			if count < 1 {
				return usagef("--count must be at least 1")
			}
			cfg, err := a.config()
			if err != nil {
				return err
			}
			scheds := jobs.Schedules(cfg.JobsConfig(), time.Now(), count)
			if asJSON {
				out := make([]scheduleJSON, 0, len(scheds))
				for _, s := range scheds {
					j := runjson.FromSchedule(s)
					out = append(out, j)
				}
				return a.printJSON(out)
			}
			t := a.table("KIND", "NAME", "LIST", "SCHEDULE", "TIME ZONE", "NEXT RUNS")
			for _, s := range scheds {
				spec, tz, list := s.Spec, s.TimeZone, ""
				if spec == "" {
					spec = "on demand"
				}
				if tz == "" {
					tz = "UTC"
				}
				if s.ListID != 0 {
					list = cell(s.ListID)
				}
				next := make([]string, 0, len(s.Next))
				for _, n := range s.Next {
					next = append(next, n.Format("2006-01-02 15:04 MST"))
				}
				nextCell := strings.Join(next, ", ")
				if s.Err != nil {
					nextCell = s.Err.Error()
				}
				kind := s.Kind
				if s.Also != "" {
					kind += " (" + s.Also + ")"
				}
				t.row(kind, s.Name, list, spec, tz, nextCell)
			}
			return t.flush()
		}),
	}
	cmd.Flags().IntVar(&count, "count", 3, "how many next run times to print per schedule")
	jsonFlag(cmd, &asJSON)
	return cmd
}
