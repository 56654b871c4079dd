package sink

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrNoLegacyURL is returned by the Legacy* methods when [Config.LegacyBaseURL] is empty.
var ErrNoLegacyURL = errors.New("api.legacy_base_url is not configured")

// ErrInvalidConfig wraps every error [New] returns.
var ErrInvalidConfig = errors.New("invalid subscriber service configuration")

// ErrInvalidInput wraps errors for arguments refused before anything is sent
// (more than MaxBatchRows rows, an unknown status value, a page size over 1000, …).
var ErrInvalidInput = errors.New("invalid input")

// APIError is an HTTP response with a failure status (or a 2xx response whose
// acknowledgement carries a failure status such as "422 Unprocessable entity").
type APIError struct {
	Method string
	// Path is the request path relative to the base URL, without the query.
	Path string
	// Legacy is true for a call to the legacy (v3) interface.
	Legacy     bool
	StatusCode int
	// Status is the service's status field ("404 Not found"), if the body had one.
	Status string
	// Message is the service's message field, if any; for a body that is not JSON it reads
	// "unexpected text/html response (HTTP 502): <first bytes>".
	Message string
	// Body is the start of the response body (at most 512 bytes), with secrets redacted.
	Body string
	// RetryAfter is the wait the service asked for with Retry-After (429, 503), or 0.
	RetryAfter time.Duration

	rawBody bool // Message describes a body that was not JSON; it already names the status
}

// Error reads like "DELETE /subscriberlists/9: 404 Not found" or
// "POST /subscribers/bulkinsert: 422 Unprocessable entity: row 3: invalid email".
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Method)
	b.WriteByte(' ')
	if e.Legacy {
		b.WriteString("legacy ")
	}
	b.WriteString(e.Path)
	b.WriteString(": ")
	switch {
	case e.rawBody:
		b.WriteString(e.Message)
	default:
		if e.Status != "" {
			b.WriteString(e.Status)
		} else {
			b.WriteString("HTTP ")
			b.WriteString(strconv.Itoa(e.StatusCode))
			if text := http.StatusText(e.StatusCode); text != "" {
				b.WriteByte(' ')
				b.WriteString(text)
			}
		}
		if e.Message != "" {
			b.WriteString(": ")
			b.WriteString(e.Message)
		}
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Temporary reports whether the failure may pass by itself: 408, 429 and 5xx.
func (e *APIError) Temporary() bool {
	return temporaryStatus(e.StatusCode)
}

func temporaryStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// IsPermanent reports whether retrying err later cannot help, so that a job should fail at
// once: an *APIError with a 4xx status other than 408 and 429 (400, 401, 403, 404, 422, …),
// [ErrNoLegacyURL], [ErrInvalidConfig], [ErrInvalidInput] and [ErrStatusFeedLimit].
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrNoLegacyURL) || errors.Is(err, ErrInvalidConfig) || errors.Is(err, ErrInvalidInput) ||
		errors.Is(err, ErrStatusFeedLimit) {
		return true
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode >= 400 && apiErr.StatusCode < 500 && !apiErr.Temporary()
	}
	var perm *permanentError
	return errors.As(err, &perm)
}

// permanentError marks a failure that no retry can fix (a TLS certificate the client does
// not trust, a response over MaxResponseBytes).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }
