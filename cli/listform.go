package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
)

// errNoDatabase: the configuration's SQLite database does not exist yet.
var errNoDatabase = errors.New("no database yet")

// listIDForm returns the form of the list parameter configured, or learnt for the account
// and remembered in the database; errNoDatabase when the SQLite database does not exist yet
// (it is not created for this).
func (a *app) listIDForm(ctx context.Context) (jobs.ListIDForm, error) {
	jc, err := a.jobsConfig(false)
	if err != nil {
		return jobs.ListIDForm{}, err
	}
	if !jc.Sink.ListIDDetect {
		return jobs.RememberedListIDForm(ctx, nil, jc.Sink)
	}
	if jc.DatabaseURL == "" {
		if _, err := os.Stat(filepath.Join(jc.DataDir, jobs.SQLiteFile)); err != nil {
			return jobs.ListIDForm{}, errNoDatabase
		}
	}
	rt, err := jobs.Open(ctx, jc)
	if err != nil {
		return jobs.ListIDForm{}, fmt.Errorf("open the database: %w", err)
	}
	defer rt.Close()
	return rt.ListIDForm(ctx)
}

// useListIDForm gives a command's client the form learnt for the account, if any: a single
// create then names the list as the service takes it.
func (a *app) useListIDForm(ctx context.Context, c *sink.Client) {
	if f, err := a.listIDForm(ctx); err == nil && f.How == "learnt" {
		c.SetListIDForm(f.Param == sink.ListParamArray)
	}
}

// listFormCheck is the doctor's line on the form of the list parameter.
func (a *app) listFormCheck(ctx context.Context) check {
	f, err := a.listIDForm(ctx)
	switch {
	case errors.Is(err, errNoDatabase) || err == nil && f.How == "":
		return check{"skip", fmt.Sprintf("the form of the list parameter is not known yet: the first push sends %s and, "+
			"if the service refuses it as a whole, %s once; the form accepted is remembered (or set api.list_id_array)",
			sink.ListParamScalar, sink.ListParamArray), ""}
	case err != nil:
		return check{"skip", "the form of the list parameter: " + err.Error(), ""}
	case f.How == "configured":
		return check{"ok", fmt.Sprintf("lists are named as %s (api.list_id_array)", f.Param), ""}
	}
	return check{"ok", fmt.Sprintf("the service takes lists named as %s (learnt %s, remembered for the account)",
		f.Param, f.At.UTC().Format("2006-01-02 15:04 UTC")), ""}
}
