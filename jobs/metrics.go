package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riverqueue/river/rivertype"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// metrics are the Prometheus metrics of one Runtime, on its own registry.
type metrics struct {
	reg       *prometheus.Registry
	rows      *prometheus.CounterVec
	batches   *prometheus.CounterVec
	requests  *prometheus.CounterVec
	responses *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	runs      *prometheus.HistogramVec
	// writeBackUnmatched counts the status changes a write-back applied to nothing.
	writeBackUnmatched *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "subsync_rows_total",
			Help: "Source rows by outcome (read, sent, rejected, suppressed, unchanged, duplicate; removed: people a sync unsubscribed), counted when checkpointed.",
		}, []string{"kind", "sync", "outcome"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "subsync_batches_total",
			Help: "Bulk batches acknowledged by the service.",
		}, []string{"kind", "sync"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "subsync_batch_requests_total",
			Help: "HTTP requests made for bulk batches, retries and 422 splits included.",
		}, []string{"kind", "sync"}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "subsync_api_responses_total",
			Help: "Responses of the subscriber service by route and HTTP status (\"error\" when none came).",
		}, []string{"method", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "subsync_api_request_duration_seconds",
			Help:    "Duration of HTTP attempts to the subscriber service.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route"}),
		runs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "subsync_run_duration_seconds",
			Help:    "Duration of finished runs by kind and outcome.",
			Buckets: prometheus.ExponentialBuckets(1, 3, 10),
		}, []string{"kind", "sync", "outcome"}),
	}
	m.writeBackUnmatched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "subsync_writeback_unmatched_total",
		Help: "Status changes a write-back applied to nothing: the source holds no row for the address (tried again on later pulls, a bounded number of times).",
	}, []string{"target"})
	m.reg.MustRegister(m.rows, m.batches, m.requests, m.responses, m.latency, m.runs, m.writeBackUnmatched,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe is the sink client's Observer.
func (m *metrics) observe(ri sink.ResponseInfo) {
	code := "error"
	if ri.StatusCode > 0 {
		code = strconv.Itoa(ri.StatusCode)
	}
	m.responses.WithLabelValues(ri.Method, ri.Route, code).Inc()
	m.latency.WithLabelValues(ri.Method, ri.Route).Observe(ri.Duration.Seconds())
}

// syncLabel is the sync label of a run's metrics: the sync's name for a sync run, empty for
// imports (whose names are file names, without bound) and status pulls.
func syncLabel(kind, name string) string {
	if kind == KindSync {
		return name
	}
	return ""
}

// addCounts adds checkpointed counts of a run of the given kind (and sync label).
func (m *metrics) addCounts(kind, sync string, c state.Counts) {
	add := func(outcome string, v int64) {
		if v > 0 {
			m.rows.WithLabelValues(kind, sync, outcome).Add(float64(v))
		}
	}
	add("read", c.Read)
	add("sent", c.Sent)
	add("rejected", c.Rejected)
	add("suppressed", c.Suppressed)
	add("unchanged", c.Unchanged)
	add("duplicate", c.Duplicates)
	add("removed", c.Removed)
	if c.Batches > 0 {
		m.batches.WithLabelValues(kind, sync).Add(float64(c.Batches))
	}
	if c.Requests > 0 {
		m.requests.WithLabelValues(kind, sync).Add(float64(c.Requests))
	}
}

func (m *metrics) runFinished(run state.Run, outcome state.RunState, d time.Duration) {
	m.runs.WithLabelValues(run.Kind, syncLabel(run.Kind, run.Name), string(outcome)).Observe(d.Seconds())
}

// dbCollector reads, at each scrape, what the database knows for the whole fleet: when each
// sync (and each other kind) last succeeded, the queue's jobs by state, and how far behind
// the status feed's cursor is. A scrape that cannot read the database reports none of them
// (and /healthz says why).
type dbCollector struct {
	rt          *Runtime
	lastSuccess *prometheus.Desc
	queue       *prometheus.Desc
	statusLag   *prometheus.Desc
	writeBacks  *prometheus.Desc
}

func newDBCollector(rt *Runtime) *dbCollector {
	return &dbCollector{
		rt: rt,
		lastSuccess: prometheus.NewDesc("subsync_last_success_timestamp_seconds",
			"When the latest completed run finished (Unix seconds), per sync for syncs; imports and status pulls have sync=\"\".",
			[]string{"kind", "sync"}, nil),
		queue: prometheus.NewDesc("subsync_queue_jobs",
			"Jobs in the River queue by state (all kinds, every worker of the database).",
			[]string{"state"}, nil),
		statusLag: prometheus.NewDesc("subsync_status_feed_lag_seconds",
			"Seconds between now and the time up to which the status feed was last pulled (absent before the first pull).",
			nil, nil),
		writeBacks: prometheus.NewDesc("subsync_writebacks",
			"Status changes to write back, by target and state: pending (failing included), unmatched (the source holds no row for the address) and done.",
			[]string{"target", "state"}, nil),
	}
}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lastSuccess
	ch <- c.queue
	ch <- c.statusLag
	ch <- c.writeBacks
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rt := c.rt
	if last, err := rt.store.LastSuccesses(ctx); err != nil {
		rt.log.WarnContext(ctx, "metrics: read last successes", slog.Any("error", err))
	} else {
		for _, l := range last {
			ch <- prometheus.MustNewConstMetric(c.lastSuccess, prometheus.GaugeValue,
				float64(l.At.UnixNano())/1e9, l.Kind, l.Name)
		}
		// A scheduled sync that never succeeded is reported as 0, so that an alert on "no
		// success for 25 hours" fires for it too (an on-demand sync is not expected to run).
		for _, s := range rt.cfg.Syncs {
			if s.Schedule != "" && !slices.ContainsFunc(last, func(l state.LastSuccess) bool { return l.Kind == KindSync && l.Name == s.Name }) {
				ch <- prometheus.MustNewConstMetric(c.lastSuccess, prometheus.GaugeValue, 0, KindSync, s.Name)
			}
		}
	}
	if depth, err := rt.db.queueDepth(ctx); err != nil {
		rt.log.WarnContext(ctx, "metrics: read queue depth", slog.Any("error", err))
	} else {
		for _, st := range rivertype.JobStates() {
			ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(depth[string(st)]), string(st))
		}
	}
	if sums, err := rt.store.WriteBackSummaries(ctx); err != nil {
		rt.log.WarnContext(ctx, "metrics: read write-backs", slog.Any("error", err))
	} else {
		for _, s := range sums {
			for st, n := range map[string]int64{state.WriteBackPending: s.Pending, state.WriteBackUnmatched: s.Unmatched,
				state.WriteBackDone: s.Done} {
				ch <- prometheus.MustNewConstMetric(c.writeBacks, prometheus.GaugeValue, float64(n), s.Target, st)
			}
		}
	}
	if cur, err := rt.store.StatusCursor(ctx, statusCursor); err != nil {
		rt.log.WarnContext(ctx, "metrics: read status cursor", slog.Any("error", err))
	} else if !cur.IsZero() {
		ch <- prometheus.MustNewConstMetric(c.statusLag, prometheus.GaugeValue, time.Since(cur).Seconds())
	}
}

// Handler serves /metrics (Prometheus), /healthz and River UI under /riverui/. /healthz
// answers 200 "ok" when the database answers and the subscriber service answered its last
// request; 503 naming what is wrong otherwise ("database unavailable", or "subscriber service
// unreachable at <api.base_url>: <error>" while the worker retries). It adds no authentication: a caller serving it
// beyond loopback puts River UI behind its own (the web package does).
func (rt *Runtime) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(RiverUIPrefix+"/", func(w http.ResponseWriter, r *http.Request) {
		riverUIHeaders(w.Header())
		rt.uiOnce.Do(func() { rt.ui, rt.uiErr = rt.riverUI() })
		if rt.uiErr != nil {
			rt.log.ErrorContext(r.Context(), "river ui is unavailable", slog.Any("error", rt.uiErr))
			http.Error(w, "River UI is unavailable: "+rt.uiErr.Error(), http.StatusServiceUnavailable)
			return
		}
		rt.ui.ServeHTTP(w, r)
	})
	mux.Handle("GET "+RiverUIPrefix, http.RedirectHandler(RiverUIPrefix+"/", http.StatusMovedPermanently))
	mux.Handle("GET /metrics", promhttp.HandlerFor(rt.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := rt.store.Ping(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("database unavailable\n"))
			return
		}
		if err := rt.service.unreachable(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "subscriber service unreachable at %s: %v\n", rt.cfg.Sink.BaseURL, err)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
