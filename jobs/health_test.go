package jobs

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

func TestServiceHealthWarnsOnceWithBaseURL(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var h serviceHealth
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	for range 3 {
		h.observe(log, "http://127.0.0.1:1/v2", sink.ResponseInfo{API: "v2", Err: refused})
	}
	require.ErrorIs(t, h.unreachable(), refused)
	require.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("level=WARN")), logs.String())
	require.Contains(t, logs.String(), "base_url=http://127.0.0.1:1/v2")
	h.observe(log, "http://127.0.0.1:1/v2", sink.ResponseInfo{API: "v2", StatusCode: 503})
	require.NoError(t, h.unreachable(), "any response means the service is reachable")
	h.observe(log, "http://127.0.0.1:1/v2", sink.ResponseInfo{API: "v2", Err: errors.New("stop initiated"), Canceled: true})
	require.NoError(t, h.unreachable(), "an attempt our own context ended says nothing of the service")
	require.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("level=WARN")), logs.String())
}
