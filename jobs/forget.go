package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/subsync/subsync/internal/secret"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// KindForget is the job kind of an erasure (subsync forget).
const KindForget = state.KindForget

// StatusErased is the status an erasure is written back to the source with (the :status
// parameter of a sql write-back, the status column of a csv one).
const StatusErased = "erased"

// ForgetArgs are the arguments of an erasure job. They carry nothing: the addresses wait in
// the state database (state.Store.RequestErasure) until the job has erased them, so no
// address is ever in the queue's tables or its logs.
type ForgetArgs struct{}

// Kind is the job kind.
func (ForgetArgs) Kind() string { return KindForget }

// InsertOpts keep at most one erasure job queued or running: two workers never erase at once.
func (ForgetArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}}
}

// RequestForget records the addresses to erase and queues the erasure job (or finds the one
// queued or running: the error then wraps ErrAlreadyQueued). It returns the job's id and the
// keyed hashes of the addresses, for ErasurePending.
func (rt *Runtime) RequestForget(ctx context.Context, emails []string) (int64, []string, error) {
	hashes, err := rt.store.RequestErasure(ctx, emails)
	if err != nil {
		return 0, nil, err
	}
	id, err := rt.EnqueueForget(ctx)
	return id, hashes, err
}

// EnqueueForget queues the erasure job for the requests waiting. If it is already queued or
// running, it returns that job's id with an error wrapping ErrAlreadyQueued.
func (rt *Runtime) EnqueueForget(ctx context.Context) (int64, error) {
	res, err := rt.q.Insert(ctx, ForgetArgs{}, nil)
	if err != nil {
		return 0, fmt.Errorf("queue erasure: %w", err)
	}
	if res.UniqueSkippedAsDuplicate {
		return res.Job.ID, fmt.Errorf("an erasure is %w as job %d", ErrAlreadyQueued, res.Job.ID)
	}
	return res.Job.ID, nil
}

// ErasurePending is how many of the keyed hashes (from RequestForget) still wait.
func (rt *Runtime) ErasurePending(ctx context.Context, hashes []string) (int, error) {
	return rt.store.ErasurePending(ctx, hashes)
}

// ForgetAddresses checks the addresses an operator asked to erase (`forget`'s arguments, the
// erasure page's lines) and returns each once, trimmed and in lower case. One that is no
// address is an error naming its place (1-based), not the text, which may be someone's data.
func ForgetAddresses(in []string) ([]string, error) {
	var out []string
	for i, e := range in {
		e = strings.ToLower(strings.TrimSpace(e))
		if local, domain, ok := strings.Cut(e, "@"); !ok || local == "" || domain == "" || strings.ContainsAny(e, " ,;") {
			return nil, fmt.Errorf("address %d is not an e-mail address", i+1)
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("give the addresses to erase")
	}
	return out, nil
}

// ForgetPlan is what erasing one address would do (subsync forget --dry-run).
type ForgetPlan struct {
	Email string
	// SubscriberID is the service's subscriber with this address; 0 when it has none.
	SubscriberID int64
	// Lists are the lists the subscriber is on, where the service says so.
	Lists []int64
	// Held counts the rows of subsync's tables that hold the person's data, by table.
	Held state.Erased
	// AlreadyErased: the address was erased before.
	AlreadyErased bool
}

// PlanForget says what erasing each address would do, changing nothing.
func (rt *Runtime) PlanForget(ctx context.Context, emails []string) ([]ForgetPlan, error) {
	if rt.sinkErr != nil {
		return nil, fmt.Errorf("subscriber service client: %w", rt.sinkErr)
	}
	out := make([]ForgetPlan, 0, len(emails))
	for _, e := range emails {
		p := ForgetPlan{Email: state.NormaliseEmail(e)}
		rec, found, err := rt.sink.SubscriberByEmail(ctx, e)
		if err != nil {
			return nil, secret.Scrub(fmt.Errorf("find the subscriber: %w", err), e)
		}
		if found {
			p.SubscriberID = rec.ID
		}
		if p.AlreadyErased, err = rt.store.IsErased(ctx, e); err != nil {
			return nil, err
		}
		if p.Held, err = rt.store.EraseDryRun(ctx, e); err != nil {
			return nil, secret.Scrub(err, e)
		}
		out = append(out, p)
	}
	return out, nil
}

// ForgetWorker works erasure jobs.
type ForgetWorker struct {
	river.WorkerDefaults[ForgetArgs]
	rt *Runtime
}

// Timeout: an erasure waits for the runs under way when it began (see markErased); a dead
// worker is detected by its lease.
func (w *ForgetWorker) Timeout(*river.Job[ForgetArgs]) time.Duration { return -1 }

// Work erases every address waiting (state.Store.ErasureRequests). It first records their
// keyed hashes and waits for the imports and syncs that began before to end (see
// markErased), then erases one person after the other:
//
//  1. state.Store.Erase records the keyed hash (from then on every run rejects the address,
//     and status pulls ignore it) and deletes the person's data from subsync's tables;
//  2. the subscriber with the address (POST /subscribers/by_email) is deleted in the service
//     (DELETE /subscribers/{id}), which removes them from every list; none is fine;
//  3. the erasure is written back to the source (status.write_back) with the status "erased";
//  4. the request, the last place the address was kept, is deleted.
//
// Every step can be done twice, so a retried job finishes what an earlier attempt began. The
// run is the audit record: read counts the people erased, sent those the service held, and
// its message says which tables held data, in counts; nothing in it names a person. Errors
// are stored and logged with the addresses masked.
func (w *ForgetWorker) Work(ctx context.Context, job *river.Job[ForgetArgs]) error {
	rt := w.rt
	return rt.work(ctx, job.JobRow, runDesc{kind: KindForget, name: "forget"}, func(ctx context.Context, a *attempt) error {
		if rt.sinkErr != nil {
			return permanent(fmt.Errorf("subscriber service client: %w", rt.sinkErr))
		}
		wb, err := newWriteBacker(rt.cfg.StatusPull.WriteBack)
		if err != nil {
			return permanent(err)
		}
		removed := state.Erased{}
		var people, deleted, unmatchedN int64
		for {
			reqs, err := rt.store.ErasureRequests(ctx)
			if err != nil {
				return err
			}
			if len(reqs) == 0 {
				break
			}
			if err := rt.markErased(ctx, a, reqs); err != nil {
				return err
			}
			for _, r := range reqs {
				inService, unmatched, err := rt.forgetOne(ctx, wb, r, removed)
				if err != nil {
					return secret.Scrub(err, r.Email)
				}
				d := state.Counts{Read: 1}
				if unmatched {
					d.Unmatched = 1
					unmatchedN++
				}
				if inService {
					d.Sent = 1
					deleted++
				}
				people++
				if err := rt.store.Checkpoint(ctx, state.Checkpoint{RunID: a.run.ID, Owner: a.owner, TTL: rt.cfg.LeaseTTL,
					Position: a.run.Position + 1, Delta: d}); err != nil {
					return err
				}
				a.run.Position++
			}
		}
		// The pages that held the addresses are zeroed in the file (secure_delete); their older
		// copies in SQLite's write-ahead log go with it.
		if ok, err := rt.store.EmptyLog(ctx); err != nil || !ok {
			a.log.WarnContext(ctx, "the write-ahead log could not be emptied: its older pages go at its next checkpoint",
				slog.Any("error", err))
		}
		a.warning = forgetSummary(people, deleted, removed)
		if unmatchedN > 0 {
			a.warning += fmt.Sprintf("; the write-back of %d %s matched nothing in the source (%s)", unmatchedN,
				plural(unmatchedN, "erasure", "erasures"), rt.cfg.StatusPull.WriteBack)
		}
		a.log.InfoContext(ctx, "people erased", slog.Int64("people", people), slog.Int64("deleted_in_service", deleted),
			slog.Int64("rows_removed", removed.Total()))
		return nil
	})
}

// inFlightPoll is how often an erasure checks whether the runs it waits for have ended.
const inFlightPoll = time.Second

// markErased records the keyed hashes of the requests, then waits until every import and
// sync that began before has ended: such a run rejects the addresses from its next chunk on,
// but a batch it had in flight could re-add a person after the service deleted them.
func (rt *Runtime) markErased(ctx context.Context, a *attempt, reqs []state.ErasureRequest) error {
	emails := make([]string, len(reqs))
	for i, r := range reqs {
		emails[i] = r.Email
	}
	mark, err := rt.store.MarkErased(ctx, emails)
	if err != nil {
		return secret.Scrub(err, emails...)
	}
	t := time.NewTicker(inFlightPoll)
	defer t.Stop()
	logged := false
	for {
		n, err := rt.store.RunsInFlightSince(ctx, mark)
		if err != nil || n == 0 {
			return err
		}
		if !logged {
			a.log.InfoContext(ctx, "waiting for the imports and syncs that began before the erasure to end", slog.Int("runs", n))
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// forgetOne erases one person (see ForgetWorker.Work), adding what was removed to removed; it
// reports whether the service held the person, and whether the write-back of the erasure
// matched nothing in the source.
func (rt *Runtime) forgetOne(ctx context.Context, wb writeBacker, r state.ErasureRequest, removed state.Erased) (inService, unmatched bool, err error) {
	n, err := rt.store.Erase(ctx, r.Email)
	if err != nil {
		return false, false, err
	}
	for t, c := range n {
		removed[t] += c
	}
	rec, found, err := rt.sink.SubscriberByEmail(ctx, r.Email)
	if err != nil {
		return false, false, fmt.Errorf("erasure request %d: find the subscriber: %w", r.ID, err)
	}
	if found {
		err := rt.sink.DeleteSubscriber(ctx, rec.ID)
		var ae *sink.APIError
		if err != nil && !(errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound) {
			return false, false, fmt.Errorf("erasure request %d: delete subscriber %d: %w", r.ID, rec.ID, err)
		}
	}
	if wb != nil {
		change := state.StatusChange{Email: r.Email, Status: StatusErased, ListID: state.AllLists, SubscriberID: rec.ID,
			ChangedAt: time.Now().UTC().Truncate(time.Millisecond)}
		matched, err := wb.write(ctx, []state.WriteBack{{ID: r.ID, Target: rt.cfg.StatusPull.WriteBack.Kind, Change: change}})
		if err != nil {
			return false, false, fmt.Errorf("erasure request %d: %w", r.ID, err)
		}
		if unmatched = !matched[0]; unmatched {
			rt.metrics.writeBackUnmatched.WithLabelValues(rt.cfg.StatusPull.WriteBack.Kind).Inc()
		}
	}
	return found, unmatched, rt.store.CompleteErasure(ctx, r.ID)
}

// forgetSummary is the audit line of an erasure run: counts only.
func forgetSummary(people, deleted int64, removed state.Erased) string {
	var b strings.Builder
	fmt.Fprintf(&b, "erased %d %s: %d deleted in the service, %d not held there", people, plural(people, "person", "people"),
		deleted, people-deleted)
	if len(removed) > 0 {
		b.WriteString("; removed from subsync's tables:")
		for i, t := range slices.Sorted(maps.Keys(removed)) {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, " %s %d", t, removed[t])
		}
	}
	return b.String()
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
