package cli

import (
	"context"

	"github.com/subsync/subsync/config"
	"github.com/subsync/subsync/jobs"
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
