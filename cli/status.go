package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

func (a *app) statusCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Where the status pull stands: suppression list, pending write-backs; 'status pull' pulls now",
		Long: `Show where the status pull stands: the time up to which the service's status changes were
pulled, the suppression list (unsubscribed and bounced people, per list), and the write-backs
to the source: how many changes are pending, failing (with the last error), unmatched and
done, the oldest pending ones and the unmatched ones. A write-back that failed is retried by
the next pull. An unmatched change is one the source held nothing for (an UPDATE that matched
no row, an address the CSV contacts file lacks): the next pulls try it again
(status.write_back.unmatched_retries) unless a later change of the person comes first.

'subsync status pull' queues a pull now.`,
		Example: `  subsync status
  subsync status --json
  subsync status pull --wait`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.runtime(ctx, false)
			if err != nil {
				return err
			}
			defer rt.Close()
			o, err := rt.StatusOverview(ctx)
			if err != nil {
				return fmt.Errorf("read the status pull's state: %w", err)
			}
			if asJSON {
				return a.printJSON(toStatusJSON(o))
			}
			return a.printStatus(o)
		}),
	}
	jsonFlag(cmd, &asJSON)
	cmd.AddCommand(a.statusPullCommand(), a.statusReconcileCommand())
	return cmd
}

func (a *app) statusReconcileCommand() *cobra.Command {
	var wait, asJSON bool
	rec := &cobra.Command{
		Use:   "reconcile",
		Short: "Queue a reconciliation now",
		Long: `Queue a reconciliation now (it also runs on status.reconcile_schedule, daily by default):
it reads each sync's list for the people the service holds as unsubscribed or bounced
(/subscribers/by_list), updated since the last reconciliation minus a day, and records those
the suppression list lacks, so a change the status feed never showed is caught. The next
status pull writes them back. The run tells how many people it found, how many were already
known and how many it recorded, and how many requests it made.`,
		Example: `  subsync status reconcile --wait`,
		Args:    cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			return a.enqueueAndFollow(cmd.Context(), "reconciliation", (*jobs.Runtime).EnqueueReconcile, wait, asJSON)
		}),
	}
	rec.Flags().BoolVar(&wait, "wait", false, "follow the run to its end (and work it here when no worker is running)")
	jsonFlag(rec, &asJSON)
	return rec
}

func (a *app) statusPullCommand() *cobra.Command {
	var wait, asJSON bool
	pull := &cobra.Command{
		Use:   "pull",
		Short: "Queue a status pull now",
		Long: `Queue a status pull now: it fetches the service's status changes since the last pull
(minus status.overlap, at least a day), every page of them, records unsubscribes and bounces in the suppression list that every
sync and import consults, and writes them back to the source (status.write_back), with any
change a failed write-back left pending. Running it twice changes nothing the second time.
The run tells how many changes it read, how many were already known, how many it recorded,
wrote back and found nothing for in the source (unmatched), and how many requests it made;
a write-back that failed or matched nothing is the note of a completed run. An answer subsync cannot
read fails the run, naming the shape expected and the entry at fault (personal data masked),
and records nothing.`,
		Example: `  subsync status pull
  subsync status pull --wait --json`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			return a.enqueueAndFollow(cmd.Context(), "status pull", (*jobs.Runtime).EnqueueStatusPull, wait, asJSON)
		}),
	}
	pull.Flags().BoolVar(&wait, "wait", false, "follow the run to its end (and work it here when no worker is running)")
	jsonFlag(pull, &asJSON)
	return pull
}

// enqueueAndFollow queues a job that runs once at a time (a status pull, a reconciliation),
// or follows the one already queued or running, and with wait follows it to its end.
func (a *app) enqueueAndFollow(ctx context.Context, what string, enqueue func(*jobs.Runtime, context.Context) (int64, error), wait, asJSON bool) error {
	rt, err := a.runtime(ctx, wait)
	if err != nil {
		return err
	}
	defer rt.Close()
	id, err := enqueue(rt, ctx)
	switch {
	case errors.Is(err, jobs.ErrAlreadyQueued):
		a.log.WarnContext(ctx, "a "+what+" is already queued or running: following that job", slog.Int64("job_id", id))
	case err != nil:
		return err
	default:
		a.log.InfoContext(ctx, what+" queued", slog.Int64("job_id", id))
	}
	return a.queued(ctx, rt, id, wait, asJSON)
}

type statusJSON struct {
	Cursor     *time.Time       `json:"cursor,omitempty"`
	WriteBack  string           `json:"write_back"`
	Suppressed []suppressedJSON `json:"suppressed"`
	WriteBacks []writeBackJSON  `json:"write_backs"`
	Pending    []pendingJSON    `json:"pending"`
	Unmatched  []pendingJSON    `json:"unmatched"`
	Totals     map[string]int64 `json:"suppressed_total"`
}

type suppressedJSON struct {
	ListID int64  `json:"list_id"`
	Status string `json:"status"`
	Count  int64  `json:"count"`
}

type writeBackJSON struct {
	Target        string     `json:"target"`
	Pending       int64      `json:"pending"`
	Failing       int64      `json:"failing"`
	Done          int64      `json:"done"`
	Unmatched     int64      `json:"unmatched"`
	OldestPending *time.Time `json:"oldest_pending,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
}

type pendingJSON struct {
	Target       string    `json:"target"`
	ChangedAt    time.Time `json:"changed_at"`
	Email        string    `json:"email"`
	Status       string    `json:"status"`
	StatusMobile string    `json:"status_mobile,omitempty"`
	ListID       int64     `json:"list_id"`
	Attempts     int       `json:"attempts"`
	// UnmatchedTries counts the writes that matched nothing in the source.
	UnmatchedTries int    `json:"unmatched_tries,omitempty"`
	LastError      string `json:"last_error,omitempty"`
}

func toStatusJSON(o jobs.StatusOverview) statusJSON {
	out := statusJSON{Cursor: timePtr(o.Cursor), WriteBack: o.WriteBack.String(), Suppressed: []suppressedJSON{},
		WriteBacks: []writeBackJSON{}, Pending: []pendingJSON{}, Unmatched: []pendingJSON{}, Totals: map[string]int64{}}
	for _, s := range o.Suppressed {
		out.Suppressed = append(out.Suppressed, suppressedJSON{s.ListID, s.Status, s.Count})
		out.Totals[s.Status] += s.Count
	}
	for _, w := range o.WriteBacks {
		out.WriteBacks = append(out.WriteBacks, writeBackJSON{w.Target, w.Pending, w.Failing, w.Done, w.Unmatched,
			timePtr(w.OldestPending), w.LastError})
	}
	entry := func(p state.WriteBack) pendingJSON {
		c := p.Change
		return pendingJSON{p.Target, c.ChangedAt, c.Email, c.Status, c.StatusMobile, c.ListID, p.Attempts, p.Unmatched, p.LastError}
	}
	for _, p := range o.Pending {
		out.Pending = append(out.Pending, entry(p))
	}
	for _, p := range o.Unmatched {
		out.Unmatched = append(out.Unmatched, entry(p))
	}
	return out
}

func (a *app) printStatus(o jobs.StatusOverview) error {
	cursor := "never pulled"
	if !o.Cursor.IsZero() {
		cursor = "changes pulled up to " + formatTime(o.Cursor)
	}
	if err := a.fields("status pull", cursor, "write-back", o.WriteBack.String()); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, "\nSuppression list:")
	t := a.table("LIST", "STATUS", "PEOPLE")
	if len(o.Suppressed) == 0 {
		t.row("-", "nobody is suppressed", "")
	}
	for _, s := range o.Suppressed {
		list := fmt.Sprint(s.ListID)
		if s.ListID == state.AllLists {
			list = "all"
		}
		t.row(list, s.Status, s.Count)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, "\nWrite-backs:")
	t = a.table("TARGET", "PENDING", "FAILING", "UNMATCHED", "DONE", "OLDEST PENDING", "LAST ERROR")
	if len(o.WriteBacks) == 0 {
		t.row("-", "none configured", "", "", "", "", "")
	}
	for _, w := range o.WriteBacks {
		target := w.Target
		if w.Target != o.WriteBack.Kind {
			target += " (no longer configured)"
		}
		t.row(target, w.Pending, w.Failing, w.Unmatched, w.Done, formatTime(w.OldestPending), w.LastError)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(o.Pending) > 0 {
		fmt.Fprintf(a.stdout, "\nPending write-backs (oldest first, at most %d per target):\n", jobs.PendingShown)
		t = a.table("TARGET", "CHANGED", "EMAIL", "STATUS", "LIST", "ATTEMPTS", "LAST ERROR")
		for _, p := range o.Pending {
			c := p.Change
			t.row(p.Target, formatTime(c.ChangedAt), c.Email, c.Status, c.ListID, p.Attempts, p.LastError)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(o.Unmatched) > 0 {
		fmt.Fprintf(a.stdout, "\nUnmatched write-backs: the source holds no row with the address (oldest first, at most %d per target):\n",
			jobs.PendingShown)
		t = a.table("TARGET", "CHANGED", "EMAIL", "STATUS", "LIST", "TRIES")
		for _, p := range o.Unmatched {
			c := p.Change
			t.row(p.Target, formatTime(c.ChangedAt), c.Email, c.Status, c.ListID, p.Unmatched)
		}
		return t.flush()
	}
	return nil
}
