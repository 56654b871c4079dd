package jobs

import (
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"
)

// RiverUIPrefix is where River UI is served on the worker's listener.
const RiverUIPrefix = "/riverui"

// riverUI builds River UI (riverqueue.com/riverui) over this runtime's River client, served
// under RiverUIPrefix: jobs can be seen, retried and cancelled there. Its background
// services run until the runtime is closed.
func (rt *Runtime) riverUI() (http.Handler, error) {
	logger := rt.log
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts := &riverui.HandlerOpts{Logger: logger, Prefix: RiverUIPrefix}
	switch c := rt.q.(type) {
	case *river.Client[pgx.Tx]:
		opts.Endpoints = riverui.NewEndpoints(c, nil)
	case *river.Client[*sql.Tx]:
		opts.Endpoints = riverui.NewEndpoints(c, nil)
	default:
		return nil, fmt.Errorf("river ui: unexpected queue client %T", rt.q)
	}
	h, err := riverui.NewHandler(opts)
	if err != nil {
		return nil, fmt.Errorf("river ui: %w", err)
	}
	if err := h.Start(rt.uiCtx); err != nil {
		return nil, fmt.Errorf("start river ui: %w", err)
	}
	return h, nil
}

// riverUIPolicy is River UI's Content-Security-Policy: its own scripts, images and API only
// (its page's configuration is a JSON script, which is not run; no eval: its one use is a
// feature probe it catches), no plugin, no frame around it, forms posted to itself. Its
// components add <style> elements of their own, so inline styles are allowed (styles only,
// never scripts).
const riverUIPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; connect-src 'self'; manifest-src 'self'; object-src 'none'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'self'"

// riverUIHeaders sets the security headers of every River UI answer: the policy, no
// framing (X-Frame-Options for old browsers), no content-type sniffing, no referrer.
func riverUIHeaders(h http.Header) {
	h.Set("Content-Security-Policy", riverUIPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}
