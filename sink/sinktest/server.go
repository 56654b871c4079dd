package sinktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Server is an Emulator listening on a local port, like httptest.Server.
type Server struct {
	*Emulator
	URL       string // v2 base URL: the server's root + V2Prefix
	LegacyURL string // v3 base URL: the server's root + V3Prefix
	User, Key string // the credentials the server accepts
	HTTP      *httptest.Server
}

// NewServer starts an Emulator on 127.0.0.1 and closes it when the test ends. Without
// WithCredentials it accepts DefaultUser and DefaultKey.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	e := New(opts...)
	hs := httptest.NewServer(e)
	s := &Server{
		Emulator: e, URL: hs.URL + V2Prefix, LegacyURL: hs.URL + V3Prefix,
		User: e.opts.user, Key: e.opts.key, HTTP: hs,
	}
	t.Cleanup(s.Close)
	return s
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.HTTP.Client() }

// Close shuts the server down; NewServer registers it with t.Cleanup already.
// Requests held by Latency end at once.
func (s *Server) Close() {
	s.shutdown()
	s.HTTP.Close()
}

// Serve answers requests on ln until ctx ends, then shuts down gracefully (requests held by
// Latency end at once; others get up to 5s) and returns nil. The Emulator may serve again.
func (e *Emulator) Serve(ctx context.Context, ln net.Listener) error {
	// Requests inherit base: canceling it at shutdown ends their Latency waits.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler: e, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	cancelBase()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down %s: %w", ln.Addr(), err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}
