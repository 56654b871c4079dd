package cli

import (
	"context"
	"fmt"
	"sort"

	"github.com/subsync/subsync/config"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
)

// writeBackCheck checks, writing nothing, that the status write-back can run: the statement
// is prepared on the source database, a contacts file read for its header. Nil without a
// write-back.
func writeBackCheck(ctx context.Context, cfg *config.Config) []check {
	spec := cfg.JobsConfig().StatusPull.WriteBack
	if spec.Kind == "" {
		return nil
	}
	what, err := jobs.PrepareWriteBack(ctx, spec)
	if err != nil {
		fix := "check status.write_back: the statement's table and columns, and that its user may update them"
		if spec.Kind == jobs.WriteBackCSV {
			fix = "check status.write_back.path and email_column"
		}
		return []check{{"FAIL", "the status write-back can run: " + err.Error(), fix}}
	}
	return []check{{"ok", what, ""}}
}

// sqlSourceChecks checks, reading no row, that every configured SQL source (a sync's, or a
// named one) connects and its query prepares in a read-only transaction, so that a wrong DSN
// fails at set-up rather than at the first scheduled run. Each line names the source's key.
func sqlSourceChecks(ctx context.Context, cfg *config.Config) []check {
	type keyed struct {
		key string
		src config.Source
	}
	var all []keyed
	for i, s := range cfg.Syncs {
		all = append(all, keyed{fmt.Sprintf("syncs[%d].source (sync %q)", i, s.Name), s.Source})
	}
	names := make([]string, 0, len(cfg.Sources))
	for name := range cfg.Sources {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		all = append(all, keyed{"sources." + name, cfg.Sources[name]})
	}
	var out []check
	for _, k := range all {
		if k.src.Kind != "sql" {
			continue
		}
		if err := sources.PrepareReadQuery(ctx, k.src.Driver, k.src.DSN, k.src.Query); err != nil {
			out = append(out, check{"FAIL", fmt.Sprintf("the SQL source %s can be read: %s", k.key, err),
				fmt.Sprintf("check %s: its dsn (host, database, user, password), and that the query's tables and columns exist", k.key)})
			continue
		}
		out = append(out, check{"ok", fmt.Sprintf("the SQL source %s connects and its query prepares (driver %s)", k.key, k.src.Driver), ""})
	}
	return out
}
