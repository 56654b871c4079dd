package config

import (
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
	}
}

// SourceConfig returns the reader configuration of a sync's source. The DSN is the resolved
// secret (from dsn, dsn_env or dsn_file); the watermark is the run's to set.
func (s Source) SourceConfig() sources.Config {
	return sources.Config{
		Kind: s.Kind, Path: s.Path, Encoding: s.Encoding, Delimiter: s.Delimiter,
		Sheet: s.Sheet, SheetIndex: s.SheetIndex, HeaderRow: s.HeaderRow,
		Driver: s.Driver, DSN: s.DSN, Query: s.Query, WatermarkColumn: s.WatermarkColumn,
	}
}
