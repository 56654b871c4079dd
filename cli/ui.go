package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/config"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/web"
)

// checkPagesAddr refuses (exit 2) to serve the pages on a non-loopback address without a
// password.
func (a *app) checkPagesAddr(addr string) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	if addr == "" || addr == config.Off {
		return nil
	}
	if err := web.CheckAddr(addr, cfg.Web.Password); err != nil {
		return &usageError{fmt.Errorf("worker.metrics_address: %w", err)}
	}
	return nil
}

// pages are subsync's web pages over rt, with River UI, /metrics and /healthz.
func (a *app) pages(rt *jobs.Runtime) (http.Handler, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	loc, err := web.LoadTimeZone(cfg.Web.TimeZone)
	if err != nil {
		return nil, &usageError{fmt.Errorf("web.time_zone: %w", err)}
	}
	h, err := web.New(rt, web.Options{Password: cfg.Web.Password, Logger: a.log, TimeZone: loc,
		MaxUploadSize: int64(cfg.Web.MaxUploadSize)})
	if err != nil {
		return nil, fmt.Errorf("web pages: %w", err)
	}
	return h, nil
}

// runWorker works jobs and serves the pages beside /metrics and /healthz.
func (a *app) runWorker(ctx context.Context, rt *jobs.Runtime) error {
	h, err := a.pages(rt)
	if err != nil {
		return err
	}
	if err := rt.RunServing(ctx, h); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

func (a *app) uiCommand() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the pages (runs, rejects, syncs, suppression, health, River UI) without working jobs",
		Long: `Serve subsync's pages, River UI, the HTTP API (/api/v1), /metrics and /healthz on worker.metrics_address (or
--addr), without working any job: for a machine that only looks. "Run now" queues the sync
for the workers. The pages need a password (SUBSYNC_WEB_PASSWORD or web.password_file) on
any address but loopback; without one subsync refuses to start (exit 2).`,
		Example: `  subsync ui
  SUBSYNC_WEB_PASSWORD=... subsync ui --addr 0.0.0.0:9464`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := a.config()
			if err != nil {
				return err
			}
			if addr == "" {
				addr = cfg.Worker.MetricsAddress
			}
			if addr == config.Off {
				return usagef("worker.metrics_address is off: give --addr")
			}
			if err := a.checkPagesAddr(addr); err != nil {
				return err
			}
			rt, err := a.runtime(ctx, false)
			if err != nil {
				return err
			}
			defer rt.Close()
			h, err := a.pages(rt)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			a.log.InfoContext(ctx, "serving the pages", slog.String("url", "http://"+ln.Addr().String()+"/"))
			select {
			case err := <-done:
				return fmt.Errorf("serve the pages: %w", err)
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("stop serving the pages: %w", err)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (default worker.metrics_address)")
	return cmd
}
