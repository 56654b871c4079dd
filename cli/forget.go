package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/internal/runjson"
	"github.com/subsync/subsync/jobs"
)

func (a *app) forgetCommand() *cobra.Command {
	var file string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "forget EMAIL...",
		Short: "Erase people everywhere, for good (or show what would go with --dry-run)",
		Long: `Erase people who asked to be forgotten: each address is looked up in the service
(/subscribers/by_email) and the subscriber deleted there (from every list); the person's data
is removed from subsync's own tables (suppression list, status change log and pending
write-backs, rejects holding the address, delta fingerprints, staged files holding it: the
import queued with such a file then fails and says so); the erasure is written back to the
source like a status change, with the status "erased"; and a keyed hash of the address is
kept so that no later sync or import sends the person again (their row becomes a reject with
code erased). The run (subsync runs --kind forget) is the audit record: counts only, no
address.

The addresses never go into the job queue: they wait in the database until the erasure job
has erased them. One erasure job runs at a time in a fleet; the command queues it (or joins
the one queued or running), follows it to its end, and works it itself only when no worker (subsync run) is running.
The job first waits for the imports and syncs that were running when it began to end.

--file reads addresses from a file, one per line (blank lines and lines starting with # are
skipped). --dry-run changes nothing and shows, per address, the service's subscriber and how
many rows of each of subsync's tables hold the person's data.`,
		Example: `  subsync forget ola.nordmann@example.com
  subsync forget --file erasure-requests.txt
  subsync forget kari@example.com --dry-run`,
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			emails, err := forgetAddresses(args, file)
			if err != nil {
				return err
			}
			rt, err := a.runtime(ctx, true)
			if err != nil {
				return err
			}
			defer rt.Close()
			if dryRun {
				plans, err := rt.PlanForget(ctx, emails)
				if err != nil {
					return err
				}
				return a.printForgetPlan(plans, asJSON)
			}
			return a.forget(ctx, rt, emails, asJSON)
		}),
	}
	cmd.Flags().StringVar(&file, "file", "", "read the addresses from `FILE`, one per line")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "change nothing: show what would be erased")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// forgetAddresses are the addresses of the arguments and the file, each once; none, or one
// that is no address, is a usage error.
func forgetAddresses(args []string, file string) ([]string, error) {
	all := slices.Clone(args)
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, usagef("--file: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				all = append(all, line)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, usagef("--file %s: %w", file, err)
		}
	}
	if len(all) == 0 {
		return nil, usagef("give the addresses to erase as arguments or with --file")
	}
	out, err := jobs.ForgetAddresses(all)
	if err != nil {
		return nil, usagef("%s", strings.Replace(err.Error(), "address ", "argument ", 1))
	}
	return out, nil
}

// forgetRounds bounds how often forget queues the erasure job again for its addresses: a job
// that was already running when they were recorded may have ended without them.
const forgetRounds = 3

// forget records the addresses, queues the erasure job (or joins the one queued or running)
// and follows it until the addresses are erased.
func (a *app) forget(ctx context.Context, rt *jobs.Runtime, emails []string, asJSON bool) error {
	id, hashes, err := rt.RequestForget(ctx, emails)
	for round := 1; ; round++ {
		switch {
		case errors.Is(err, jobs.ErrAlreadyQueued):
			a.log.InfoContext(ctx, "an erasure is already queued or running: following that job", slog.Int64("job_id", id))
		case err != nil:
			return err
		default:
			a.log.InfoContext(ctx, "erasure queued", slog.Int64("job_id", id), slog.Int("people", len(emails)))
		}
		if err := a.queued(ctx, rt, id, true, asJSON); err != nil {
			return err
		}
		pending, err := rt.ErasurePending(ctx, hashes)
		if err != nil {
			return err
		}
		if pending == 0 {
			return nil
		}
		if round == forgetRounds {
			return fmt.Errorf("%d of the %d people still wait for their erasure; run forget again", pending, len(emails))
		}
		id, err = rt.EnqueueForget(ctx)
	}
}

// printForgetPlan prints what forget would erase. The addresses are the operator's own input.
func (a *app) printForgetPlan(plans []jobs.ForgetPlan, asJSON bool) error {
	if asJSON {
		out := runjson.FromForgetPlans(plans)
		return a.printJSON(out)
	}
	tb := a.table("EMAIL", "SERVICE", "SUBSYNC'S TABLES")
	for _, p := range plans {
		service := "not held"
		if p.SubscriberID != 0 {
			service = fmt.Sprintf("subscriber %d: deleted", p.SubscriberID)
		}
		var held []string
		for _, t := range slices.Sorted(maps.Keys(p.Held)) {
			held = append(held, fmt.Sprintf("%s %d", t, p.Held[t]))
		}
		tables := strings.Join(held, ", ")
		if tables == "" {
			tables = "nothing"
		}
		if p.AlreadyErased {
			tables += " (erased before)"
		}
		tb.row(p.Email, service, tables)
	}
	if err := tb.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(a.stdout, "dry run: nothing was erased")
	return err
}
