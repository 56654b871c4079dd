package jobs

import (
	"log/slog"
	"sync"

	"github.com/subsync/subsync/sink"
)

// serviceHealth remembers whether the subscriber service answered the last attempt: a
// network failure (no response at all) marks it unreachable until a response arrives. The
// worker keeps retrying with backoff meanwhile; /healthz reports the state.
type serviceHealth struct {
	mu   sync.Mutex
	down error
}

func (h *serviceHealth) observe(log *slog.Logger, baseURL string, ri sink.ResponseInfo) {
	if ri.API != "" && ri.API != "v2" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case ri.Canceled:
		// Our own context ended the attempt (a stop, a cancelled job): no news of the service.
	case ri.StatusCode == 0 && ri.Err != nil:
		if h.down == nil {
			log.Warn("subscriber service unreachable: retrying with backoff", slog.String("base_url", baseURL),
				slog.String("error", ri.Err.Error()))
		}
		h.down = ri.Err
	case ri.StatusCode > 0:
		if h.down != nil {
			log.Info("subscriber service reachable again", slog.String("base_url", baseURL))
		}
		h.down = nil
	}
}

// unreachable returns the last network error while the service is unreachable, else nil.
func (h *serviceHealth) unreachable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}
