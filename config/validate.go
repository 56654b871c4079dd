package config

import (
	"cmp"
	"strings"

	"github.com/subsync/subsync/internal/check"
	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/web"
)

// setDefaults fills every key left out (or zero) with its default.
func (c *Config) setDefaults() {
	a := &c.API
	a.BaseURL = strings.TrimRight(cmp.Or(a.BaseURL, BaseURLDefault), "/")
	a.LegacyBaseURL = strings.TrimRight(a.LegacyBaseURL, "/")
	a.RequestsPerSecond = cmp.Or(a.RequestsPerSecond, sink.RequestsPerSecondDefault)
	a.MaxInFlight = cmp.Or(a.MaxInFlight, sink.MaxInFlightDefault)
	a.Timeout = cmp.Or(a.Timeout, Duration(sink.TimeoutDefault))
	a.MaxAttempts = cmp.Or(a.MaxAttempts, sink.MaxAttemptsDefault)
	a.MaxRetryTime = cmp.Or(a.MaxRetryTime, Duration(sink.MaxRetryTimeDefault))
	a.RetryAfterCap = cmp.Or(a.RetryAfterCap, Duration(sink.RetryAfterCapDefault))

	c.Database.DataDir = cmp.Or(c.Database.DataDir, DataDirDefault)
	c.Web.MaxUploadSize = cmp.Or(c.Web.MaxUploadSize, Size(web.MaxUploadSizeDefault))

	w := &c.Worker
	w.Concurrency = cmp.Or(w.Concurrency, jobs.ConcurrencyDefault)
	w.BatchesInFlight = cmp.Or(w.BatchesInFlight, jobs.BatchesInFlightDefault)
	w.MetricsAddress = cmp.Or(w.MetricsAddress, MetricsAddressDefault)
	w.ShutdownTimeout = cmp.Or(w.ShutdownTimeout, Duration(jobs.ShutdownTimeoutDefault))
	w.MemoryBudget = cmp.Or(w.MemoryBudget, Size(jobs.MemoryBudgetDefault))

	for i := range c.Syncs {
		s := &c.Syncs[i]
		s.TimeZone = cmp.Or(s.TimeZone, jobs.TimeZoneDefault)
		s.Suppression = cmp.Or(s.Suppression, pipeline.SuppressionSkip)
		s.Removed = cmp.Or(s.Removed, jobs.RemovedKeep)
		s.MaxRemovals = cmp.Or(s.MaxRemovals, RemovalLimit(jobs.MaxRemovalsDefault))
		src := &s.Source
		src.Kind = strings.ToLower(cmp.Or(src.Kind, sources.KindFromName(src.Path)))
	}

	for name, src := range c.Sources {
		src.Kind = strings.ToLower(cmp.Or(src.Kind, sources.KindFromName(src.Path)))
		c.Sources[name] = src
	}

	st := &c.Status
	st.Schedule = cmp.Or(st.Schedule, StatusScheduleDefault)
	st.TimeZone = cmp.Or(st.TimeZone, jobs.TimeZoneDefault)
	st.Overlap = cmp.Or(st.Overlap, Duration(jobs.StatusOverlapDefault))
	st.ReconcileSchedule = cmp.Or(st.ReconcileSchedule, ReconcileScheduleDefault)
	st.MaxPages = cmp.Or(st.MaxPages, sink.StatusMaxPagesDefault)
	st.MaxMegabytes = cmp.Or(st.MaxMegabytes, sink.StatusMaxBytesDefault>>20)
	st.MaxTime = cmp.Or(st.MaxTime, Duration(sink.StatusMaxTimeDefault))

	r := &c.Retention
	r.Rejects = cmp.Or(r.Rejects, Period(jobs.RetentionRejectsDefault))
	r.Runs = cmp.Or(r.Runs, Period(jobs.RetentionRunsDefault))
	r.StatusLog = cmp.Or(r.StatusLog, Period(jobs.RetentionStatusLogDefault))
	r.Schedule = cmp.Or(r.Schedule, RetentionScheduleDefault)
	r.TimeZone = cmp.Or(r.TimeZone, jobs.TimeZoneDefault)
}

// validate records every problem of a configuration whose defaults are filled. The rules
// are those of the worker itself (jobs.Config.Validate, which runs the client's and every
// source's): a configuration that passes is one `subsync run` starts with.
func (c *Config) validate(p *problems) {
	p.fields(c.JobsConfig().Validate())
}

// CheckCredentials reports a missing user id or API key, in the form of [Load]'s problems.
// Load does not require them, so that commands that never call the service (migrate, runs,
// preview without custom fields) run without secrets; whatever calls the service checks.
func (c *Config) CheckCredentials() error {
	var creds check.Problems
	creds.Nest("Sink", c.SinkConfig().CheckCredentials())
	var p problems
	p.fields(creds.Err())
	if len(p) > 0 {
		return &Error{Path: c.Path, Problems: p}
	}
	return nil
}
