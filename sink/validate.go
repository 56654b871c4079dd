package sink

import (
	"cmp"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/subsync/subsync/internal/check"
	"github.com/subsync/subsync/internal/secret"
)

// WithDefaults returns cfg with every zero field set to its default (the *Default constants).
func (cfg Config) WithDefaults() Config {
	if cfg.RequestsPerSecond == 0 {
		cfg.RequestsPerSecond = RequestsPerSecondDefault
	}
	cfg.MaxInFlight = cmp.Or(cfg.MaxInFlight, MaxInFlightDefault)
	cfg.Timeout = cmp.Or(cfg.Timeout, TimeoutDefault)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, MaxAttemptsDefault)
	cfg.MaxRetryTime = cmp.Or(cfg.MaxRetryTime, MaxRetryTimeDefault)
	cfg.RetryAfterCap = cmp.Or(cfg.RetryAfterCap, RetryAfterCapDefault)
	cfg.BackoffBase = cmp.Or(cfg.BackoffBase, BackoffBaseDefault)
	cfg.BackoffMax = cmp.Or(cfg.BackoffMax, BackoffMaxDefault)
	cfg.Version = cmp.Or(cfg.Version, VersionDefault)
	cfg.StatusMaxPages = cmp.Or(cfg.StatusMaxPages, StatusMaxPagesDefault)
	cfg.StatusMaxBytes = cmp.Or(cfg.StatusMaxBytes, StatusMaxBytesDefault)
	cfg.StatusMaxTime = cmp.Or(cfg.StatusMaxTime, StatusMaxTimeDefault)
	return cfg
}

// Validate checks the settings of cfg with its defaults filled, the credentials apart (see
// [Config.CheckCredentials]): every problem is a *check.FieldError naming the field. [New]
// and the configuration file's check both run it.
func (cfg Config) Validate() error {
	cfg = cfg.WithDefaults()
	var p check.Problems
	checkBaseURL(&p, "BaseURL", cfg.BaseURL)
	if cfg.LegacyBaseURL != "" {
		checkBaseURL(&p, "LegacyBaseURL", cfg.LegacyBaseURL)
	}
	if math.IsNaN(cfg.RequestsPerSecond) {
		p.Add("RequestsPerSecond", "NaN", "not a number")
	}
	atLeastOne(&p, "MaxInFlight", cfg.MaxInFlight)
	atLeastOne(&p, "MaxAttempts", cfg.MaxAttempts)
	positive(&p, "Timeout", cfg.Timeout)
	positive(&p, "MaxRetryTime", cfg.MaxRetryTime)
	positive(&p, "RetryAfterCap", cfg.RetryAfterCap)
	positive(&p, "BackoffBase", cfg.BackoffBase)
	positive(&p, "BackoffMax", cfg.BackoffMax)
	atLeastOne(&p, "StatusMaxPages", cfg.StatusMaxPages)
	if cfg.StatusMaxBytes < 1<<20 {
		p.Add("StatusMaxBytes", strconv.FormatInt(cfg.StatusMaxBytes, 10), "must be at least 1 MiB")
	}
	positive(&p, "StatusMaxTime", cfg.StatusMaxTime)
	return p.Err()
}

// CheckCredentials reports a missing user id or API key (fields UserID and APIKey). [New]
// requires them; a program that never calls the service need not.
func (cfg Config) CheckCredentials() error {
	var p check.Problems
	if cfg.UserID == "" {
		p.Add("UserID", "", "missing")
	}
	if cfg.APIKey == "" {
		p.Add("APIKey", "", "missing")
	}
	return p.Err()
}

func atLeastOne(p *check.Problems, field string, v int) {
	if v < 1 {
		p.Add(field, strconv.Itoa(v), "must be at least 1")
	}
}

func positive(p *check.Problems, field string, d time.Duration) {
	if d <= 0 {
		p.Add(field, d.String(), "must be positive")
	}
}

// checkBaseURL refuses anything but an absolute http(s) URL without credentials, query or
// fragment, and plain http to anything but a loopback address: the API key travels in
// every request.
func checkBaseURL(p *check.Problems, field, raw string) {
	if raw == "" {
		p.Add(field, "", "missing")
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		p.Add(field, raw, "want an absolute https:// URL")
	case u.User != nil:
		p.Add(field, secret.DSN("", raw), "credentials do not belong in the URL: set the user id and the API key instead")
	case u.RawQuery != "" || u.Fragment != "":
		p.Add(field, raw, "must not have a query or a fragment")
	case u.Scheme == "http" && !IsLoopback(u.Hostname()):
		p.Add(field, raw, "plain http is refused for a non-loopback host (the API key would travel in clear text): use https")
	}
}

// IsLoopback reports whether host is "localhost" or a loopback IP address (127.0.0.0/8, ::1).
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
