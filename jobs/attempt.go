package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// errLeaseLost cancels an attempt whose run another worker took over.
var errLeaseLost = errors.New("run lease lost")

// commitTimeout bounds one write of a run's outcome (and of a write-back's result), made even
// while the job is being cancelled.
const commitTimeout = 30 * time.Second

// errInterrupted ends a run whose worker is shutting down; it resumes from its checkpoint.
var errInterrupted = pipeline.ErrInterrupted

// errCancelled cancels an attempt whose job a user cancelled (seen by the heartbeat; River
// also cancels the attempt's context itself where its driver can notify).
var errCancelled = errors.New("cancelled by a user")

// permanentError marks a failure retrying cannot fix: the job fails at once.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// permanent marks err as permanent.
func permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// isPermanent reports whether retrying err cannot help.
func isPermanent(err error) bool {
	var pe *permanentError
	var se *mapping.SpecError
	return errors.As(err, &pe) || errors.As(err, &se) || sink.IsPermanent(err) ||
		errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, sources.ErrQueryNeverSucceeds) ||
		errors.Is(err, sources.ErrTooLarge) || // a workbook past a bound stays past it
		errors.Is(err, sources.ErrMixedEncoding) // so does a file's encoding
}

// describe turns an error into the message a person reads in run history.
func describe(err error) string {
	var ae *sink.APIError
	if errors.As(err, &ae) {
		switch ae.StatusCode {
		case 401:
			return "the subscriber service refused the credentials (401 Unauthorized): " +
				"check api.user_id and the API key (SUBSYNC_API_KEY); " + err.Error()
		case 403:
			return "the subscriber service refused access (403 Forbidden): " +
				"the account behind api.user_id may lack this permission; " + err.Error()
		}
	}
	return err.Error()
}

// runDesc describes the run of a job for run history.
type runDesc struct {
	kind, name, source string
	listID             int64
}

// attempt is one attempt at a run, owning its lease.
type attempt struct {
	rt      *Runtime
	job     *rivertype.JobRow
	run     state.Run
	owner   string
	log     *slog.Logger
	onFinal []func(context.Context) // cleanups once the run is final (staged file)
	// warning is recorded as the run's message when it completes: something went wrong that
	// the next run retries (a write-back that failed), though the run did its work.
	warning string
	cancel  context.CancelCauseFunc // ends the attempt's work
	leaseMu sync.Mutex
	renewed time.Time // when the lease was last renewed, as asked (see leaseGate)
}

// work runs one attempt of a job's run: it claims the run (or gives way to a live owner),
// keeps the lease alive, runs fn, then records the outcome and tells River what to do:
// complete; cancel at once (permanent failure, user cancel); snooze (a stop, a long
// Retry-After, another owner); or retry with backoff (a transient failure).
func (rt *Runtime) work(ctx context.Context, job *rivertype.JobRow, d runDesc,
	fn func(ctx context.Context, a *attempt) error) error {
	var tok [6]byte
	_, _ = rand.Read(tok[:])
	a := &attempt{rt: rt, job: job,
		owner: rt.workerID + "/" + strconv.FormatInt(job.ID, 10) + "/" + strconv.Itoa(job.Attempt) + "/" + hex.EncodeToString(tok[:])}
	a.log = rt.log.With(slog.Int64("job_id", job.ID), slog.String("kind", d.kind))
	a.renewed = time.Now() // before the claim: the lease lasts at least a TTL from here
	run, err := rt.store.ClaimRun(ctx, state.Claim{JobID: job.ID, Kind: d.kind, Name: d.name, ListID: d.listID,
		Source: d.source, ScheduledAt: job.ScheduledAt, Owner: a.owner, Worker: rt.workerID, TTL: rt.cfg.LeaseTTL})
	switch {
	case errors.Is(err, state.ErrRunFinished):
		// The run ended (a worker died after recording it): report the same to River.
		if run.State == state.RunCompleted {
			return nil
		}
		return river.JobCancel(fmt.Errorf("run %d %s: %s", run.ID, run.State, run.Error))
	case errors.Is(err, state.ErrLeaseHeld):
		a.log.InfoContext(ctx, "run is owned by another live worker; checking again later", slog.Int64("run_id", run.ID))
		return river.JobSnooze(rt.cfg.LeaseTTL)
	case err != nil:
		return err
	}
	a.run = run
	a.log = a.log.With(slog.Int64("run_id", run.ID))
	if run.Attempts > 1 {
		a.log.InfoContext(ctx, "resuming run", slog.Int64("position", run.Position), slog.Int("attempt", run.Attempts))
	} else {
		a.log.InfoContext(ctx, "run started", slog.String("name", d.name), slog.Int64("list_id", d.listID))
	}

	workCtx, cancel := context.WithCancelCause(ctx)
	a.cancel = cancel
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		a.heartbeat(workCtx, cancel)
	}()
	workErr := fn(workCtx, a)
	cause := context.Cause(workCtx)
	cancel(nil)
	<-hbDone

	// The outcome is recorded even when ctx was cancelled (a hard stop, a user cancel).
	octx, ocancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer ocancel()
	return a.finish(octx, ctx, workErr, cause)
}

// heartbeat renews the lease every third of its TTL; if the lease is lost, or cannot be
// renewed for a whole TTL, it cancels the attempt.
func (a *attempt) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) {
	ttl := a.rt.cfg.LeaseTTL
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		asked := time.Now()
		err := a.rt.store.RenewLease(ctx, a.run.ID, a.owner, ttl)
		switch {
		case err == nil:
			lastOK = time.Now()
			a.setRenewed(asked)
			if a.cancelRequested(ctx) {
				cancel(errCancelled)
				return
			}
		case errors.Is(err, state.ErrLeaseLost):
			cancel(errLeaseLost)
			return
		case ctx.Err() != nil:
			return
		default:
			a.log.WarnContext(ctx, "could not renew run lease", slog.Any("error", err))
			if time.Since(lastOK) > ttl {
				cancel(errLeaseLost)
				return
			}
		}
	}
}

// cancelRequested reports whether a user asked River to cancel the job.
func (a *attempt) cancelRequested(ctx context.Context) bool {
	job, err := a.rt.q.JobGet(ctx, a.job.ID)
	if err != nil {
		return false
	}
	var md struct {
		CancelAttemptedAt *time.Time `json:"cancel_attempted_at"`
	}
	return json.Unmarshal(job.Metadata, &md) == nil && md.CancelAttemptedAt != nil
}

func (a *attempt) finish(ctx, jobCtx context.Context, workErr, cause error) error {
	rt, run := a.rt, a.run
	final := func(st state.RunState, msg string) {
		if err := rt.store.Finish(ctx, run.ID, a.owner, st, msg); err != nil {
			a.log.ErrorContext(ctx, "could not record the end of the run", slog.Any("error", err))
			rt.loseEnd(a.job.ID, run.ID, st, msg, err)
			return
		}
		defer rt.signalRunEnded()
		if got, err := rt.store.Run(ctx, run.ID); err == nil {
			rt.metrics.runFinished(run, st, got.Duration())
			rt.runFinal(ctx, got)
			a.log.LogAttrs(ctx, slog.LevelInfo, "run "+string(st), runAttrs(got, msg)...)
		}
		for _, f := range a.onFinal {
			f(ctx)
		}
	}
	pause := func(st state.RunState, msg string) {
		if err := rt.store.Release(ctx, run.ID, a.owner, st, msg); err != nil {
			a.log.WarnContext(ctx, "could not release the run", slog.Any("error", err))
		}
	}
	stopping := false
	select {
	case <-rt.stoppingChan():
		stopping = true
	default:
	}

	if state.IsDiskFull(workErr) {
		workErr = permanent(rt.diskFull(workErr))
	}
	var ae *sink.APIError
	switch {
	case workErr == nil:
		final(state.RunCompleted, a.warning)
		return nil
	case errors.Is(cause, errLeaseLost) || errors.Is(workErr, state.ErrLeaseLost):
		a.log.WarnContext(ctx, "another worker took the run over; leaving it to that worker")
		return river.JobSnooze(rt.cfg.LeaseTTL)
	case errors.Is(cause, errCancelled) || errors.Is(context.Cause(jobCtx), rivertype.ErrJobCancelledRemotely):
		final(state.RunCancelled, errCancelled.Error())
		return river.JobCancel(errCancelled)
	case stopping && (errors.Is(workErr, errInterrupted) || jobCtx.Err() != nil):
		pause(state.RunInterrupted, errInterrupted.Error())
		a.log.InfoContext(ctx, "run interrupted; it resumes from its checkpoint")
		return river.JobSnooze(0)
	case isPermanent(workErr):
		msg := describe(workErr)
		final(state.RunFailed, msg)
		return river.JobCancel(errors.New(msg))
	case errors.As(workErr, &ae) && ae.RetryAfter > 0:
		msg := describe(workErr)
		pause(state.RunRetrying, msg)
		a.log.WarnContext(ctx, "the service asked to wait; snoozing", slog.Duration("retry_after", ae.RetryAfter))
		return river.JobSnooze(ae.RetryAfter)
	case a.job.Attempt >= a.job.MaxAttempts:
		msg := describe(workErr)
		final(state.RunFailed, msg)
		return workErr
	default:
		msg := describe(workErr)
		pause(state.RunRetrying, msg)
		a.log.WarnContext(ctx, "run attempt failed; retrying with backoff", slog.String("error", msg),
			slog.Int("attempt", a.job.Attempt))
		return errors.New(msg)
	}
}
