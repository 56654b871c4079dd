package config

import "github.com/subsync/subsync/sink"

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
