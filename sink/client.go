package sink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/subsync/subsync/internal/secret"
	"golang.org/x/time/rate"
)

// errorBodyLimit is how much of a failed response body is read (and the rest discarded).
const errorBodyLimit = 4 << 10

// bodyExcerptLimit bounds APIError.Body.
const bodyExcerptLimit = 512

// Client is the typed client of the subscriber service. Create it with [New].
type Client struct {
	cfg       Config
	baseURL   string // v2 root without trailing slash
	legacyURL string // v3 root without trailing slash, "" when not configured
	http      *http.Client
	limiter   *rate.Limiter // nil = unlimited
	sem       chan struct{}
	auth      string // Authorization header value
	userAgent string
	log       *slog.Logger
	masker    *secret.Masker
	form      listForm
}

// New checks cfg, fills its defaults and returns a Client. Errors wrap [ErrInvalidConfig]
// and never contain the API key.
func New(cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := errors.Join(cfg.Validate(), cfg.CheckCredentials()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	baseURL := strings.TrimRight(cfg.BaseURL, "/")
	legacyURL := strings.TrimRight(cfg.LegacyBaseURL, "/")
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = cfg.MaxInFlight
		httpClient = &http.Client{Transport: tr}
	}
	// A copy, so the caller's client is left as it is; whatever redirect rule it had, a
	// redirect off the service's https origin is not followed (see checkRedirect).
	hc := *httpClient
	hc.CheckRedirect = checkRedirect
	httpClient = &hc
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		cfg:       cfg,
		baseURL:   baseURL,
		legacyURL: legacyURL,
		http:      httpClient,
		sem:       make(chan struct{}, cfg.MaxInFlight),
		userAgent: "subsync/" + cfg.Version,
		log:       logger,
	}
	c.form.array.Store(cfg.ListIDArray)
	c.form.known.Store(!cfg.ListIDDetect)
	if cfg.RequestsPerSecond > 0 {
		// A burst of 1: requests are spaced evenly, never bunched after a quiet spell.
		c.limiter = rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), 1)
	}
	token := base64.StdEncoding.EncodeToString([]byte(cfg.UserID + ":" + cfg.APIKey))
	c.auth = "Basic " + token
	c.masker = secret.BasicAuth(token, cfg.APIKey)
	return c, nil
}

// call describes one logical request (all its attempts).
type call struct {
	method string
	route  string // path template for metrics and logs
	path   string // path relative to the base URL
	query  url.Values
	body   []byte // nil: no body
	legacy bool
}

// response is the outcome of the last attempt of a call.
type response struct {
	status   int
	header   http.Header
	body     []byte
	attempts int
}

func (c *call) api() string {
	if c.legacy {
		return "v3"
	}
	return "v2"
}

// do runs a call through the retry, rate-limit, in-flight and timeout layers. It returns the
// response of a 2xx attempt; otherwise an error: an *APIError (possibly wrapped) for an HTTP
// failure status, or a network error wrapped with "METHOD path: ". resp.attempts is set
// in every case. After do returns, nothing reads c.body any more.
//
// A PATCH the service refuses with 405 is made once more as PUT (the public PHP client
// updates with PUT; the spec says PATCH).
func (c *Client) do(ctx context.Context, cl *call) (response, error) {
	resp, err := c.doCall(ctx, cl)
	var apiErr *APIError
	if cl.method == http.MethodPatch && errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusMethodNotAllowed {
		c.log.InfoContext(ctx, "the service refused PATCH; updating with PUT", slog.String("route", cl.route))
		put := *cl
		put.method = http.MethodPut
		return c.doCall(ctx, &put)
	}
	return resp, err
}

// doCall is do without the PUT fallback.
func (c *Client) doCall(ctx context.Context, cl *call) (resp response, err error) {
	base := c.baseURL
	if cl.legacy {
		if c.legacyURL == "" {
			return resp, fmt.Errorf("%s legacy %s: %w", cl.method, cl.path, ErrNoLegacyURL)
		}
		base = c.legacyURL
	}
	target := base + cl.path
	if len(cl.query) > 0 {
		target += "?" + cl.query.Encode()
	}
	var body *replayBody
	if cl.body != nil {
		body = &replayBody{data: cl.body}
		defer body.closeAll()
	}
	start := time.Now()
	var lastErr error
	for attempt := 1; ; attempt++ {
		resp.attempts = attempt
		status, header, data, netErr, fatal := c.attempt(ctx, cl, target, body)
		var wait time.Duration
		switch {
		case fatal != nil:
			return resp, c.finalError(ctx, cl, attempt, fatal, lastErr)
		case netErr != nil:
			lastErr = fmt.Errorf("%s %s: %w", cl.method, cl.path, netErr)
			if ctx.Err() != nil {
				return resp, c.finalError(ctx, cl, attempt, nil, lastErr)
			}
			if !retryableNetError(netErr) {
				return resp, &permanentError{lastErr}
			}
			wait = c.backoff(attempt)
		case status >= 200 && status < 300:
			resp.status, resp.header, resp.body = status, header, data
			return resp, nil
		default:
			apiErr := c.apiError(cl, status, header, data)
			if !apiErr.Temporary() {
				return resp, apiErr
			}
			lastErr = apiErr
			if apiErr.RetryAfter > c.cfg.RetryAfterCap {
				return resp, apiErr
			}
			if apiErr.RetryAfter > 0 {
				// Wait what the service asked for, plus up to 10% so that clients that
				// were told the same instant do not all come back at once.
				wait = apiErr.RetryAfter + rand.N(apiErr.RetryAfter/10+1)
			} else {
				wait = c.backoff(attempt)
			}
		}
		if attempt >= c.cfg.MaxAttempts {
			return resp, fmt.Errorf("giving up after %d attempts: %w", attempt, lastErr)
		}
		if spent := time.Since(start); spent+wait > c.cfg.MaxRetryTime {
			return resp, fmt.Errorf("giving up after %d attempts in %s (retry budget %s): %w",
				attempt, spent.Round(time.Millisecond), c.cfg.MaxRetryTime, lastErr)
		}
		c.log.WarnContext(ctx, "subscriber service request failed, retrying",
			slog.String("method", cl.method), slog.String("route", cl.route), slog.String("api", cl.api()),
			slog.Int("attempt", attempt), slog.Int("status", status),
			slog.Duration("wait", wait), slog.String("error", lastErr.Error()))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return resp, c.finalError(ctx, cl, attempt, nil, lastErr)
		case <-timer.C:
		}
	}
}

// finalError reports the end of a call by ctx (or by a fatal error such as a rate-limit
// wait that cannot end before ctx's deadline), with the last failure for context.
func (c *Client) finalError(ctx context.Context, cl *call, attempts int, fatal, lastErr error) error {
	cause := fatal
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	if lastErr != nil {
		// The last failure names the call. A network failure stays in the chain (a caller
		// tells a refused connection from a time out); an answer of the service does not,
		// for the call did not end with it.
		var apiErr *APIError
		if errors.As(lastErr, &apiErr) {
			return fmt.Errorf("%w (after %d attempts; last failure: %s)", cause, attempts, lastErr.Error())
		}
		return fmt.Errorf("%w (after %d attempts; last failure: %w)", cause, attempts, lastErr)
	}
	return fmt.Errorf("%s %s: %w", cl.method, cl.path, cause)
}

// attempt makes one HTTP attempt: rate limit, in-flight slot, request with a timeout, and
// the (capped) response body. netErr is a failure worth retrying (subject to
// retryableNetError); fatal ends the call (ctx done while waiting, body over the cap).
func (c *Client) attempt(ctx context.Context, cl *call, target string, body *replayBody) (status int, header http.Header, data []byte, netErr, fatal error) {
	if c.limiter != nil {
		if err := c.limiter.Wait(ctx); err != nil {
			return 0, nil, nil, nil, fmt.Errorf("waiting for the rate limiter: %w", err)
		}
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, nil, nil, nil, ctx.Err()
	}
	defer func() { <-c.sem }()
	if err := passGate(ctx); err != nil {
		return 0, nil, nil, nil, err
	}

	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, cl.method, target, nil)
	if err != nil {
		return 0, nil, nil, nil, &permanentError{fmt.Errorf("build request: %w", err)}
	}
	if body != nil {
		req.Body = body.open()
		req.GetBody = func() (io.ReadCloser, error) { return body.open(), nil }
		req.ContentLength = int64(len(body.data))
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")

	began := time.Now()
	res, err := c.http.Do(req)
	if err != nil {
		err = c.describeNetError(ctx, err)
		c.observe(ctx, cl, 0, began, err)
		return 0, nil, nil, err, nil
	}
	defer res.Body.Close()
	ok := res.StatusCode >= 200 && res.StatusCode < 300
	limit := int64(errorBodyLimit)
	if ok {
		limit = MaxResponseBytes + 1
	}
	data, err = io.ReadAll(io.LimitReader(res.Body, limit))
	if err != nil && ok {
		err = fmt.Errorf("read response (HTTP %d): %w", res.StatusCode, c.describeNetError(ctx, err))
		c.observe(ctx, cl, res.StatusCode, began, err)
		return 0, nil, nil, err, nil
	}
	// A failed response cut short still tells its status: keep what was read.
	c.observe(ctx, cl, res.StatusCode, began, nil)
	if ok && len(data) > MaxResponseBytes {
		return 0, nil, nil, nil, &permanentError{fmt.Errorf("response body exceeds %d MiB (HTTP %d)", MaxResponseBytes>>20, res.StatusCode)}
	}
	return res.StatusCode, res.Header, data, nil, nil
}

func (c *Client) observe(ctx context.Context, cl *call, status int, began time.Time, err error) {
	if c.cfg.Observer == nil {
		return
	}
	c.cfg.Observer(ResponseInfo{Method: cl.method, Route: cl.route, API: cl.api(), StatusCode: status, Duration: time.Since(began), Err: err,
		Canceled: err != nil && ctx.Err() != nil})
}

// describeNetError strips the *url.Error wrapper (whose text repeats the whole URL) and
// names a per-attempt timeout as such.
func (c *Client) describeNetError(ctx context.Context, err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("attempt timed out after %s: %w", c.cfg.Timeout, err)
	}
	return err
}

// retryableNetError reports whether a failure without a response is worth another attempt:
// everything but certificate problems and unsafe redirects, which no retry fixes.
func retryableNetError(err error) bool {
	if errors.Is(err, ErrUnsafeRedirect) {
		return false
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verification     *tls.CertificateVerificationError
		header           tls.RecordHeaderError
	)
	return !errors.As(err, &unknownAuthority) && !errors.As(err, &hostname) &&
		!errors.As(err, &invalid) && !errors.As(err, &verification) && !errors.As(err, &header)
}

// backoff returns the wait before attempt+1: full jitter over an exponential ceiling.
func (c *Client) backoff(attempt int) time.Duration {
	ceiling := c.cfg.BackoffMax
	if attempt-1 < 30 {
		ceiling = min(ceiling, c.cfg.BackoffBase<<(attempt-1))
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling)
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || math.IsNaN(secs) {
			return 0
		}
		return time.Duration(min(secs, 365*24*3600) * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// redact removes the API key and the Basic credentials from text taken from a response.
func (c *Client) redact(s string) string { return c.masker.String(s) }

// replayBody hands out readers over one request body, one per attempt, and can revoke them
// all so the bytes may be reused once the call is over, even if a transport goroutine still
// holds a reader.
type replayBody struct {
	data    []byte
	mu      sync.Mutex
	readers []*bodyReader
}

func (b *replayBody) open() io.ReadCloser {
	r := &bodyReader{data: b.data}
	b.mu.Lock()
	b.readers = append(b.readers, r)
	b.mu.Unlock()
	return r
}

func (b *replayBody) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.readers {
		_ = r.Close()
	}
}

var errBodyRevoked = errors.New("request body revoked: the call is over")

type bodyReader struct {
	mu     sync.Mutex
	data   []byte
	off    int
	closed bool
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errBodyRevoked
	}
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	return n, nil
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	r.closed, r.data = true, nil
	r.mu.Unlock()
	return nil
}
