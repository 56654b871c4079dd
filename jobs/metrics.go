package jobs

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "subsync_rows_total",
			Help: "Source rows by outcome (read, sent, rejected, suppressed, unchanged, duplicate), counted when checkpointed.",
		}, []string{"kind", "outcome"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "subsync_batches_total",
			Help: "Bulk batches acknowledged by the service.",
		}, []string{"kind"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "subsync_batch_requests_total",
			Help: "HTTP requests made for bulk batches, retries and 422 splits included.",
		}, []string{"kind"}),
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
		}, []string{"kind", "outcome"}),
	}
	m.reg.MustRegister(m.rows, m.batches, m.requests, m.responses, m.latency, m.runs,
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

// addCounts adds checkpointed counts of a run of the given kind.
func (m *metrics) addCounts(kind string, c state.Counts) {
	add := func(outcome string, v int64) {
		if v > 0 {
			m.rows.WithLabelValues(kind, outcome).Add(float64(v))
		}
	}
	add("read", c.Read)
	add("sent", c.Sent)
	add("rejected", c.Rejected)
	add("suppressed", c.Suppressed)
	add("unchanged", c.Unchanged)
	add("duplicate", c.Duplicates)
	if c.Batches > 0 {
		m.batches.WithLabelValues(kind).Add(float64(c.Batches))
	}
	if c.Requests > 0 {
		m.requests.WithLabelValues(kind).Add(float64(c.Requests))
	}
}

func (m *metrics) runFinished(kind string, outcome state.RunState, d time.Duration) {
	m.runs.WithLabelValues(kind, string(outcome)).Observe(d.Seconds())
}

// Handler serves /metrics (Prometheus) and /healthz: 200 "ok" when the database answers and
// the subscriber service answered its last request; 503 naming what is wrong otherwise
// ("database unavailable", or "subscriber service unreachable at <api.base_url>: <error>"
// while the worker retries).
func (rt *Runtime) Handler() http.Handler {
	mux := http.NewServeMux()
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
