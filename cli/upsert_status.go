package cli

import (
	"context"
	"fmt"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
)

// upsertStatus decides the status a single create/update of email in a list sends, so that
// no admin command revives by accident: a person subsync holds as unsubscribed or bounced
// (jobs.Runtime.KeptStatus) is sent with that status unless status is active, given
// explicitly, which re-activates them and says so in note. It also gives the client the form
// of the list parameter learnt for the account.
func (a *app) upsertStatus(ctx context.Context, rt *jobs.Runtime, c *sink.Client, list int64, email, status string) (sent, note string, err error) {
	if f, err := rt.ListIDForm(ctx); err == nil && f.How == "learnt" {
		c.SetListIDForm(f.Param == sink.ListParamArray)
	}
	kept, err := rt.KeptStatus(ctx, list, email)
	if err != nil {
		return "", "", fmt.Errorf("upsert subscriber %s: find whether they unsubscribed or bounced "+
			"(nothing was sent; --status says what to send): %w", email, err)
	}
	switch {
	case kept == "" || status == kept:
		return status, "", nil
	case status == "":
		return kept, fmt.Sprintf("%s is %s: sent as %s, not re-activated (--status active re-activates)", email, kept, kept), nil
	case status == sink.StatusActive:
		return status, fmt.Sprintf("re-activates %s (was %s), as --status active asks", email, kept), nil
	}
	return status, "", nil
}
