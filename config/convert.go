package config

import (
	"time"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// SinkConfig returns the subscriber service client's configuration. The caller adds what
// is not configuration: Logger, Version, HTTPClient and Observer.
func (c *Config) SinkConfig() sink.Config {
	a := c.API
	return sink.Config{
		BaseURL:           a.BaseURL,
		LegacyBaseURL:     a.LegacyBaseURL,
		UserID:            a.UserID,
		APIKey:            a.APIKey,
		RequestsPerSecond: a.RequestsPerSecond,
		MaxInFlight:       a.MaxInFlight,
		Timeout:           a.Timeout.D(),
		MaxAttempts:       a.MaxAttempts,
		MaxRetryTime:      a.MaxRetryTime.D(),
		RetryAfterCap:     a.RetryAfterCap.D(),
		ListIDArray:       a.ListIDArray != nil && *a.ListIDArray,
		ListIDDetect:      a.ListIDArray == nil,
		StatusMaxPages:    c.Status.MaxPages,
		StatusMaxBytes:    int64(c.Status.MaxMegabytes) << 20,
		StatusMaxTime:     c.Status.MaxTime.D(),
	}
}

// SourceConfig returns the reader configuration of a sync's source. The DSN is the resolved
// secret (from dsn, dsn_env or dsn_file); the watermark is the run's to set.
func (s Source) SourceConfig() sources.Config {
	return sources.Config{
		Kind: s.Kind, Path: s.Path, Encoding: s.Encoding, Delimiter: s.Delimiter, StrayLines: s.StrayLines,
		Sheet: s.Sheet, SheetIndex: s.SheetIndex, HeaderRow: s.HeaderRow,
		Driver: s.Driver, DSN: s.DSN, Query: s.Query, WatermarkColumn: s.WatermarkColumn,
	}
}

// JobsConfig returns the worker runtime's configuration. The caller adds Logger, and the
// sink's Logger and Version.
func (c *Config) JobsConfig() jobs.Config {
	jc := jobs.Config{
		DatabaseURL:     c.Database.URL,
		DataDir:         c.Database.DataDir,
		SharedDirs:      c.Database.SharedDirs,
		Concurrency:     c.Worker.Concurrency,
		BatchesInFlight: c.Worker.BatchesInFlight,
		ShutdownTimeout: c.Worker.ShutdownTimeout.D(),
		MemoryBudget:    int64(c.Worker.MemoryBudget),
		Sink:            c.SinkConfig(),
		StatusPull: jobs.StatusPullSpec{
			TimeZone:  c.Status.TimeZone,
			Overlap:   c.Status.Overlap.D(),
			Reconcile: c.Status.Reconcile,
		},
	}
	jc.Notify = jobs.NotifySpec{WebhookURL: c.Notify.WebhookURL, MissedScheduleGrace: c.Notify.MissedScheduleGrace.D()}
	if c.Worker.MetricsAddress != Off {
		jc.MetricsAddr = c.Worker.MetricsAddress
	}
	if c.Status.Schedule != Off {
		jc.StatusPull.Schedule = c.Status.Schedule
	}
	if c.Status.ReconcileSchedule != Off {
		jc.StatusPull.ReconcileSchedule = c.Status.ReconcileSchedule
	}
	r := c.Retention
	jc.Retention = jobs.RetentionSpec{Rejects: time.Duration(r.Rejects), Runs: time.Duration(r.Runs),
		StatusLog: time.Duration(r.StatusLog), TimeZone: r.TimeZone}
	if r.Schedule != Off {
		jc.Retention.Schedule = r.Schedule
	}
	if wb := c.Status.WriteBack; wb.Kind != "" {
		jc.StatusPull.WriteBack = jobs.WriteBackSpec{Kind: wb.Kind, Driver: wb.Driver, DSN: wb.DSN,
			Statement: wb.Statement, Path: wb.Path, EmailColumn: wb.EmailColumn, StatusColumn: wb.StatusColumn,
			ChangedAtColumn: wb.ChangedAtColumn, UnmatchedRetries: wb.UnmatchedRetries}
	}
	for _, s := range c.Syncs {
		jc.Syncs = append(jc.Syncs, jobs.SyncSpec{
			Name: s.Name, Schedule: s.Schedule, TimeZone: s.TimeZone, ListID: s.List,
			Source: s.Source.SourceConfig(), Mapping: s.Mapping.Spec, Suppression: s.Suppression,
			Removed: s.Removed, MaxRemovals: string(s.MaxRemovals), VerifyEvery: s.VerifyEvery,
		})
	}
	if len(c.Sources) > 0 {
		jc.Sources = make(map[string]sources.Config, len(c.Sources))
		for name, src := range c.Sources {
			jc.Sources[name] = src.SourceConfig()
		}
	}
	return jc
}
