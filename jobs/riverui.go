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
