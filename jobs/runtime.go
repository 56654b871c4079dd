package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// Runtime is subsync's worker machinery on one database: the River client with the import,
// sync and status pull workers, the schedules, the state store and the metrics.
//
// Open it once per process. Run works jobs until its context ends; the Enqueue methods and
// the history queries work without Run (a command that only queues a job).
type Runtime struct {
	cfg      Config
	log      *slog.Logger
	db       *database
	store    *state.Store
	q        queue
	metrics  *metrics
	notify   *notifier // nil without a webhook
	started  time.Time
	sink     *sink.Client
	sinkErr  error
	workerID string

	service serviceHealth
	here    stagedHere // the files this process staged (see localCopy)

	mu       sync.Mutex
	ended    chan struct{}     // closed (and replaced) when a run of this process reaches a final state
	working  bool              // the River client is started (by Run or Wait)
	stopping chan struct{}     // closed when the working session starts stopping
	lost     map[int64]lostEnd // by job: ends of runs of this process the database could not record
	// queueStopping is closed when the River client has stopped, after a stop that returned
	// before it had (see stoppedBefore).
	queueStopping <-chan struct{}
	periodic      bool // schedules were added to the client

	uiCtx    context.Context // River UI's background services run until Close
	uiCancel context.CancelFunc
	uiOnce   sync.Once
	ui       http.Handler
	uiErr    error
}

// Open opens the database (creating the SQLite file if needed), applies River's and
// subsync's migrations, and builds the River client. Close releases it.
func Open(ctx context.Context, cfg Config) (*Runtime, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := db.migrate(ctx); err != nil {
		db.close()
		return nil, err
	}
	rt := &Runtime{
		cfg:      cfg,
		log:      cfg.Logger,
		db:       db,
		store:    state.New(db.stateDB, db.dialect),
		metrics:  newMetrics(),
		notify:   newNotifier(cfg.Notify, cfg.Logger),
		started:  time.Now(),
		workerID: cfg.WorkerID,
		stopping: make(chan struct{}),
	}
	rt.metrics.reg.MustRegister(newDBCollector(rt))
	rt.uiCtx, rt.uiCancel = context.WithCancel(context.WithoutCancel(ctx))
	if rt.workerID == "" {
		rt.workerID = defaultWorkerID()
	}
	sc := cfg.Sink
	userObserver := sc.Observer
	sc.Observer = func(ri sink.ResponseInfo) {
		rt.metrics.observe(ri)
		rt.service.observe(rt.log, sc.BaseURL, ri)
		if userObserver != nil {
			userObserver(ri)
		}
	}
	if sc.Logger == nil {
		sc.Logger = cfg.Logger
	}
	if sc.ListIDDetect && sc.OnListIDForm == nil {
		sc.OnListIDForm = rt.rememberListForm
	}
	// A command that only reads history needs no credentials: a bad sink configuration fails
	// Run and the jobs, not Open.
	rt.sink, rt.sinkErr = sink.New(sc)

	workers := river.NewWorkers()
	river.AddWorker(workers, &ImportWorker{rt: rt})
	river.AddWorker(workers, &SyncWorker{rt: rt})
	river.AddWorker(workers, &StatusPullWorker{rt: rt})
	river.AddWorker(workers, &ForgetWorker{rt: rt})
	river.AddWorker(workers, &PruneWorker{rt: rt})
	rt.q, err = db.newQueue(&river.Config{
		ID:              rt.workerID,
		Logger:          cfg.Logger,
		JobTimeout:      -1,
		Queues:          map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Concurrency}},
		SoftStopTimeout: cfg.ShutdownTimeout,
		Workers:         workers,
	})
	if err != nil {
		db.close()
		return nil, fmt.Errorf("create river client: %w", err)
	}
	return rt, nil
}

// Migrate creates or upgrades the database (River's tables and subsync's) and returns.
func Migrate(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.close()
	return db.migrate(ctx)
}

func defaultWorkerID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "worker"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// State returns the state store: run history, rejects, suppression list.
func (rt *Runtime) State() *state.Store { return rt.store }

// WorkerID is the name of this worker in run history.
func (rt *Runtime) WorkerID() string { return rt.workerID }

// Close releases the database. Call it after Run and Wait have returned.
func (rt *Runtime) Close() {
	rt.uiCancel()
	rt.db.close()
}

// Run works queued and scheduled jobs until ctx ends, serving [Runtime.Handler] (/metrics,
// /healthz, River UI) on Config.MetricsAddr. When ctx ends it stops taking jobs, lets
// in-flight batches finish for up to ShutdownTimeout (then cancels them), keeps their
// checkpoints, and returns nil: the interrupted runs resume on the next start, here or on
// another worker.
func (rt *Runtime) Run(ctx context.Context) error {
	return rt.RunServing(ctx, nil)
}

// RunServing is Run serving h on Config.MetricsAddr instead of Handler (nil = Handler); h
// usually wraps Handler, as subsync's web pages do.
func (rt *Runtime) RunServing(ctx context.Context, h http.Handler) error {
	if h == nil {
		h = rt.Handler()
	}
	if rt.sinkErr != nil {
		return fmt.Errorf("subscriber service client: %w", rt.sinkErr)
	}
	var srv *http.Server
	if rt.cfg.MetricsAddr != "" {
		ln, err := net.Listen("tcp", rt.cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("listen for metrics on %s: %w", rt.cfg.MetricsAddr, err)
		}
		srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		rt.log.InfoContext(ctx, "serving metrics", slog.String("addr", ln.Addr().String()))
	}
	stop, err := rt.startWorking(ctx, true)
	if err != nil {
		if srv != nil {
			_ = srv.Close()
		}
		return err
	}
	beatCtx, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	beatDone := rt.heartbeat(beatCtx)
	rt.warnSharedDirs(ctx) // logged before "worker started", which says the worker is ready
	rt.log.InfoContext(ctx, "worker started", slog.String("worker", rt.workerID),
		slog.String("database", rt.db.dialect.String()), slog.Int("concurrency", rt.cfg.Concurrency))
	var runErr error
	select {
	case <-ctx.Done():
		rt.log.InfoContext(ctx, "worker stopping: letting in-flight batches finish",
			slog.Duration("timeout", rt.cfg.ShutdownTimeout))
	case <-rt.q.Stopped():
		runErr = errors.New("the job queue stopped unexpectedly")
	}
	stopBeat() // from now on a command waiting for a run works it itself
	<-beatDone
	stopErr := stop(false)
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
	}
	if runErr != nil {
		return runErr
	}
	if stopErr != nil {
		return stopErr
	}
	rt.log.InfoContext(ctx, "worker stopped")
	return nil
}

// startWorking starts the River client (with the schedules when periodic) and the lease
// sweeper. The returned stop function stops both gracefully, or in a hurry (see stopQueue).
func (rt *Runtime) startWorking(ctx context.Context, periodic bool) (stop func(hurry bool) error, err error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.working {
		return nil, errors.New("this runtime is already working jobs")
	}
	if periodic && !rt.periodic {
		pjs, err := rt.periodicJobs()
		if err != nil {
			return nil, err
		}
		rt.q.PeriodicJobs().AddMany(pjs)
		rt.periodic = true
	}
	rt.stopping = make(chan struct{})
	if err := rt.stoppedBefore(); err != nil {
		return nil, err
	}
	base := context.WithoutCancel(ctx)
	if err := rt.q.Start(base); err != nil {
		return nil, fmt.Errorf("start job queue: %w", err)
	}
	queueStopped := rt.q.Stopped()
	rt.working = true
	sweepCtx, cancelSweep := context.WithCancel(base)
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		rt.sweep(sweepCtx)
	}()
	stopping := rt.stopping
	return func(hurry bool) error {
		close(stopping)
		cancelSweep()
		<-sweepDone
		err := rt.stopQueue(base, hurry)
		rt.mu.Lock()
		rt.working = false
		if err != nil {
			rt.queueStopping = queueStopped // it goes on stopping: a new start waits for it
		}
		rt.mu.Unlock()
		if err != nil {
			return fmt.Errorf("stop job queue: %w", err)
		}
		return nil
	}, nil
}

// stoppingChan is closed when the current working session starts stopping.
func (rt *Runtime) stoppingChan() <-chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.stopping
}

// sweep takes over runs whose worker died: a job River still holds as running whose run has
// no live lease (and was attempted more than a lease ago) is made available again.
func (rt *Runtime) sweep(ctx context.Context) {
	interval := rt.cfg.LeaseTTL / 2
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := rt.sweepOnce(ctx); err != nil && ctx.Err() == nil {
			rt.log.WarnContext(ctx, "lease sweep failed", slog.Any("error", err))
		}
		if err := rt.checkMissed(ctx, rt.started, time.Now()); err != nil && ctx.Err() == nil {
			rt.log.WarnContext(ctx, "missed schedule check failed", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (rt *Runtime) sweepOnce(ctx context.Context) error {
	res, err := rt.q.JobList(ctx, river.NewJobListParams().
		Kinds(KindImport, KindSync, KindStatusPull, KindForget).
		States("running").
		First(1000))
	if err != nil {
		return fmt.Errorf("list running jobs: %w", err)
	}
	horizon := time.Now().Add(-rt.cfg.LeaseTTL)
	for _, job := range res.Jobs {
		if job.AttemptedAt == nil || job.AttemptedAt.After(horizon) {
			continue
		}
		accounted, err := rt.store.Accounted(ctx, job.ID)
		if err != nil {
			return err
		}
		if accounted {
			continue
		}
		ok, err := rt.db.resetJob(ctx, job.ID, job.Attempt)
		if err != nil {
			return err
		}
		if ok {
			rt.log.WarnContext(ctx, "took over a job whose worker stopped renewing its lease",
				slog.Int64("job_id", job.ID), slog.String("kind", job.Kind))
		}
	}
	// Runs left claimed by a dead worker whose job then ended in the queue (cancelled, or
	// given up) record that end, so history never shows them running for ever.
	expired, err := rt.store.ExpiredLeases(ctx)
	if err != nil {
		return err
	}
	for _, id := range expired {
		job, err := rt.q.JobGet(ctx, id)
		st, reason := state.RunState(""), ""
		switch {
		case errors.Is(err, rivertype.ErrNotFound):
			st, reason = state.RunFailed, "the job is no longer in the queue"
		case err != nil:
			return fmt.Errorf("read job %d: %w", id, err)
		case job.State == rivertype.JobStateCancelled:
			st, reason = state.RunCancelled, errCancelled.Error()
		case job.State == rivertype.JobStateDiscarded:
			st, reason = state.RunFailed, "the queue gave up on the job after its last attempt"
		default:
			continue
		}
		if _, err := rt.store.CloseOrphan(ctx, id, st, reason); err != nil {
			return err
		}
	}
	return nil
}

// runEnded returns a channel closed when a run worked by this process next reaches a final
// state, so that Wait need not wait for its next poll.
func (rt *Runtime) runEnded() <-chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.ended == nil {
		rt.ended = make(chan struct{})
	}
	return rt.ended
}

// signalRunEnded wakes the Waits of this process: a run reached a final state.
func (rt *Runtime) signalRunEnded() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.ended != nil {
		close(rt.ended)
		rt.ended = nil
	}
}
