package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
)

func (a *app) importCommand() *cobra.Command {
	var (
		src              fileSourceFlags
		list             int64
		mappingFile      string
		sourceName       string
		shared, wait     bool
		suppression, tag string
		asJSON           bool
		dry              dryRunFlags
	)
	cmd := &cobra.Command{
		Use:   "import FILE --list ID",
		Short: "Queue a one-off import of a CSV or XLSX file (or a named source) into a list; --dry-run plans it",
		Long: `Queue a one-off import of FILE (CSV or XLSX) into the list ID, in batches of up to 1000
rows, for a worker to run; --source NAME imports a source of the configuration instead
([sources.NAME], e.g. a database). The mapping comes from --mapping FILE; without it,
columns are mapped by their names. Try it first with 'subsync preview FILE'.

People who unsubscribed or bounced (the suppression list) are never made active again:
--suppression skip (default) leaves them out, update-keep-status sends their data with the
status they have (bulkinsert's status=unsubscribed or status=bounce).

On Postgres the file is copied into the database, so that a worker on another machine can
read it, unless it is under one of database.shared_dirs (directories every worker reads at
the same path), or --shared-path says every worker reads FILE at this path. With --wait
the command follows the run to its end with progress; a worker that is running (subsync
run, on any machine of the database) works it, and the command works it itself only when
none is; it exits 1 when the run fails. 'subsync runs ID --rejects rejects.csv' exports
the rows that were not sent, with the reason.

With --dry-run nothing is queued or sent: the file (or source) is read, mapped and checked
against the suppression list here and now, and the command prints how many rows would be
sent (per status), suppressed, duplicates and rejected; --plan FILE writes one CSV line per
source row.

Refused before anything is queued (exit 2, no run recorded): a missing file, a directory,
an Excel 97-2003 .xls, an unreadable --mapping, a list the service does not have (asked
once, within --service-timeout). With --wait, a service that cannot be reached fails the
command then, naming api.base_url and the cause; Ctrl-C while waiting cancels the job.`,
		Example: `  subsync import contacts.csv --list 12 --wait
  subsync import members.xlsx --sheet Members --list 12 --mapping members.mapping.toml
  subsync import /mnt/share/export.csv --list 12 --shared-path
  subsync import --source crm --list 12 --wait --json
  subsync import contacts.csv --list 12 --dry-run --plan plan.csv`,
		Args: cobra.MaximumNArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if list <= 0 {
				return usagef("--list: want the id of the list to import into")
			}
			if err := dry.check(wait, asJSON); err != nil {
				return err
			}
			var file string
			if len(args) == 1 {
				file = args[0]
			}
			switch {
			case file == "" && sourceName == "":
				return usagef("give a FILE to import, or --source NAME")
			case file != "" && sourceName != "":
				return usagef("give a FILE or --source NAME, not both")
			}
			if err := pipeline.CheckSuppression(suppression); err != nil {
				return usagef("--suppression %q: %v", suppression, err)
			}
			if !slices.Contains([]string{"", "replace", "merge"}, tag) {
				return usagef("--tag %q: want replace or merge", tag)
			}
			if file != "" {
				if err := checkImportFile(file); err != nil {
					return err
				}
			}
			scfg, err := src.config(file)
			if err != nil {
				return err
			}
			var spec *mapping.Spec
			if mappingFile != "" {
				s, err := mapping.LoadSpec(mappingFile)
				if err != nil {
					return &usageError{fmt.Errorf("--mapping: %w", err)}
				}
				spec = &s
			}
			if sourceName != "" {
				cfg, err := a.config()
				if err != nil {
					return err
				}
				if _, ok := cfg.Sources[sourceName]; !ok {
					return usagef("--source %q: no [sources.%s] in %s", sourceName, sourceName, configName(cfg.Path))
				}
			}
			if _, err := a.jobsConfig(false); err != nil {
				return err // no configuration: refused before the list is asked for
			}
			if err := a.checkList(ctx, list, wait || dry.dryRun); err != nil {
				return err
			}
			rt, err := a.runtime(ctx, wait || dry.dryRun)
			if err != nil {
				return err
			}
			defer rt.Close()
			ia := jobs.ImportArgs{
				Path: file, Shared: shared, Source: sourceName, ListID: list, Mapping: spec,
				Format: scfg.Kind, Encoding: scfg.Encoding, Delimiter: scfg.Delimiter,
				Sheet: scfg.Sheet, SheetIndex: scfg.SheetIndex, HeaderRow: scfg.HeaderRow,
				Tag: tag, Suppression: suppression,
			}
			if dry.dryRun {
				return a.dryRun(ctx, dry, asJSON, func(ctx context.Context, row func(jobs.PlanRow) error) (jobs.Plan, error) {
					return rt.PlanImport(ctx, ia, row)
				})
			}
			id, err := rt.EnqueueImport(ctx, ia)
			if err != nil {
				return fmt.Errorf("queue the import: %w", err)
			}
			a.log.InfoContext(ctx, "import queued", slog.Int64("job_id", id), slog.Int64("list_id", list))
			return a.queued(ctx, rt, id, wait, asJSON)
		}),
	}
	src.add(cmd)
	f := cmd.Flags()
	f.Int64Var(&list, "list", 0, "id of the list to import into (required)")
	f.StringVar(&mappingFile, "mapping", "", "mapping file (TOML); default: columns mapped by their names")
	f.StringVar(&sourceName, "source", "", "import the configured source [sources.NAME] instead of a file")
	f.BoolVar(&shared, "shared-path", false, "every worker reads FILE at this path: do not copy it into the database")
	f.StringVar(&suppression, "suppression", pipeline.SuppressionSkip, "rows of people who unsubscribed or bounced: skip, or update-keep-status (sent with their suppressed status)")
	f.StringVar(&tag, "tag", "", "tags of rows that carry tags: replace (default) or merge")
	f.BoolVar(&wait, "wait", false, "follow the run to its end (and work it here when no worker is running)")
	dry.add(cmd)
	jsonFlag(cmd, &asJSON)
	return cmd
}

// checkImportFile refuses, before anything is queued, a file the import could not read: one
// that does not exist, a directory, an unreadable file, or an Excel 97-2003 workbook.
func checkImportFile(file string) error {
	st, err := os.Stat(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return usagef("%s: %v", file, err)
	}
	if st.IsDir() {
		return usagef("%s: is a directory: give a CSV or XLSX file", file)
	}
	if strings.EqualFold(filepath.Ext(file), ".xls") {
		return usagef("%s: an Excel 97-2003 workbook (.xls) is not supported: save it as .xlsx or CSV", file)
	}
	f, err := os.Open(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return usagef("%s: %v", file, err)
	}
	return f.Close()
}

// checkList asks the service once whether the list exists, within --service-timeout. A list
// that does not exist is the user's to fix (exit 2). When the service cannot be asked, a run
// that is followed here (--wait, --dry-run) fails now, naming api.base_url; a plain queueing
// goes on with a warning, for a worker elsewhere may reach the service. Without credentials
// on this machine (a machine that only queues), the check is left to the run.
func (a *app) checkList(ctx context.Context, list int64, follow bool) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	if cfg.CheckCredentials() != nil && !follow {
		return nil
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	cctx, cancel := a.interactive(ctx)
	defer cancel()
	_, err = c.List(cctx, list)
	var apiErr *sink.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound:
		return usagef("--list %d: the service has no such list (subsync lists ls shows them)", list)
	case ctx.Err() != nil:
		return ctx.Err()
	case follow:
		return fmt.Errorf("check list %d: %w", list, a.explainService(err))
	}
	a.log.WarnContext(ctx, "could not check the list; queueing the import anyway", slog.Int64("list_id", list), slog.Any("error", a.explainService(err)))
	return nil
}
