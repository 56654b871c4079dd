package sink

import (
	"fmt"
	"github.com/subsync/subsync/internal/secret"
	"log/slog"
	"net/http"
	"time"
)

// Defaults applied by [New] to zero fields of [Config].
const (
	RequestsPerSecondDefault = 5.0
	MaxInFlightDefault       = 4
	TimeoutDefault           = 30 * time.Second
	MaxAttemptsDefault       = 8
	MaxRetryTimeDefault      = 5 * time.Minute
	RetryAfterCapDefault     = 60 * time.Second
	BackoffBaseDefault       = 250 * time.Millisecond
	BackoffMaxDefault        = 20 * time.Second
	VersionDefault           = "dev"
	// StatusMaxPagesDefault, StatusMaxBytesDefault and StatusMaxTimeDefault bound one read of
	// the status feed (Client.ReadStatusFeed).
	StatusMaxPagesDefault = 5000
	StatusMaxBytesDefault = 256 << 20
	StatusMaxTimeDefault  = 8 * time.Minute
)

// MaxResponseBytes caps the size of a response body the client reads.
const MaxResponseBytes = 8 << 20

// Config configures a [Client]. Zero fields take the *Default values.
type Config struct {
	// BaseURL is the root of the current (v2) interface including its version prefix,
	// e.g. https://subscribers.dialogapi.no/api/public/v2. Required.
	BaseURL string
	// LegacyBaseURL is the root of the legacy (v3) interface. It has no default: when empty,
	// the Legacy* methods return [ErrNoLegacyURL].
	LegacyBaseURL string
	// UserID is the Basic auth user name. Required.
	UserID string
	// APIKey is the Basic auth password. Required. It is never printed: see [Config.String].
	APIKey string
	// ListIDArray names the list of a bulkinsert or single create as subscriber_list_id[]=N
	// instead of the spec's subscriber_list_id=N. Both forms are seen in public clients; a
	// service that reads only the array form needs it. The two are not sent together: a PHP
	// service would read both as one array and a scalar reader would see an array.
	ListIDArray bool
	// ListIDDetect lets the client find the form the service takes: while no request naming
	// a list has been accepted, the first one the service refuses as a whole is sent once
	// more in the other form, and the form accepted is used from then on (see
	// Client.ListIDForm, Client.SetListIDForm). False: ListIDArray is the form, always.
	ListIDDetect bool
	// OnListIDForm, when set, is called when detection finds the form the service takes
	// (array: subscriber_list_id[]), so that it can be remembered for the account.
	OnListIDForm func(array bool)
	// RequestsPerSecond limits the rate of HTTP attempts (retries included).
	// 0 means RequestsPerSecondDefault; a negative value means unlimited.
	RequestsPerSecond float64
	// MaxInFlight limits concurrent HTTP attempts. 0 means MaxInFlightDefault.
	MaxInFlight int
	// Timeout bounds one HTTP attempt, reading the response included. 0 means TimeoutDefault.
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one call (1 = no retry). 0 means MaxAttemptsDefault.
	MaxAttempts int
	// MaxRetryTime is the time budget of one call, retries included: a wait that would end
	// past it is not started. 0 means MaxRetryTimeDefault.
	MaxRetryTime time.Duration
	// RetryAfterCap is the longest Retry-After waited for inside the client. A longer one
	// ends the call with an *APIError whose RetryAfter is set (a job snoozes for it).
	// 0 means RetryAfterCapDefault.
	RetryAfterCap time.Duration
	// BackoffBase and BackoffMax shape the exponential backoff between retries without a
	// Retry-After: attempt n waits a uniformly random time in [0, min(BackoffMax,
	// BackoffBase·2^(n-1))) ("full jitter"). 0 means BackoffBaseDefault / BackoffMaxDefault.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// HTTPClient sends the requests. nil means a client with its own transport sized for
	// MaxInFlight. Its Timeout, if any, applies on top of Timeout.
	HTTPClient *http.Client
	// Logger receives a warning per retried attempt. nil discards.
	Logger *slog.Logger
	// Version goes into the User-Agent "subsync/<version>". Empty means VersionDefault.
	Version string
	// StatusMaxPages, StatusMaxBytes and StatusMaxTime bound one read of the status feed
	// (Client.ReadStatusFeed): its requests (pages, probes, narrowed windows), the size of its
	// answers together, and its time. Past one the read fails with ErrStatusFeedLimit.
	// 0 means StatusMaxPagesDefault, StatusMaxBytesDefault, StatusMaxTimeDefault.
	StatusMaxPages int
	StatusMaxBytes int64
	StatusMaxTime  time.Duration
	// Observer, when set, is called once per HTTP attempt (for metrics). It must be fast and
	// safe for concurrent use.
	Observer func(ResponseInfo)
}

// ResponseInfo describes one HTTP attempt, for [Config.Observer].
type ResponseInfo struct {
	Method string
	// Route is the path template, e.g. "/subscribers/bulkinsert" or "/subscriberlists/{id}".
	Route string
	// API is "v2" or "v3" (legacy).
	API string
	// StatusCode is the HTTP status, 0 when no response arrived.
	StatusCode int
	// Duration covers sending the request and reading the response body.
	Duration time.Duration
	// Err is the network or body-reading error of the attempt; nil when a full response
	// arrived, whatever its status.
	Err error
	// Canceled: the caller's context ended during the attempt (a worker stopping, a command
	// interrupted); its Err says nothing about the service.
	Canceled bool
}

// String describes the configuration with the API key redacted.
func (c Config) String() string {
	return fmt.Sprintf("sink.Config{BaseURL:%q LegacyBaseURL:%q UserID:%q APIKey:%s RequestsPerSecond:%g MaxInFlight:%d Timeout:%s MaxAttempts:%d MaxRetryTime:%s RetryAfterCap:%s Version:%q}",
		c.BaseURL, c.LegacyBaseURL, c.UserID, secret.Mark(c.APIKey), c.RequestsPerSecond, c.MaxInFlight,
		c.Timeout, c.MaxAttempts, c.MaxRetryTime, c.RetryAfterCap, c.Version)
}

// GoString is String, so that %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// Format makes every fmt verb (%v, %+v, %#v, %s, %q) print the redacted form.
func (c Config) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", c.String())
		return
	}
	_, _ = f.Write([]byte(c.String()))
}

// LogValue logs the configuration with the API key redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", c.BaseURL),
		slog.String("legacy_base_url", c.LegacyBaseURL),
		slog.String("user_id", c.UserID),
		slog.String("api_key", secret.Mark(c.APIKey)),
		slog.Float64("requests_per_second", c.RequestsPerSecond),
		slog.Int("max_in_flight", c.MaxInFlight),
		slog.Duration("timeout", c.Timeout),
		slog.Int("max_attempts", c.MaxAttempts),
		slog.Duration("max_retry_time", c.MaxRetryTime),
		slog.Duration("retry_after_cap", c.RetryAfterCap),
	)
}
