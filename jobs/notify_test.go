package jobs_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// webhook is a local receiver of notifications.
type webhook struct {
	mu       sync.Mutex
	messages []string
}

func (h *webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Text string `json:"text"`
	}
	b, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &body) != nil || body.Text == "" {
		http.Error(w, "want a JSON {\"text\": …} POST", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.messages = append(h.messages, body.Text)
	h.mu.Unlock()
	_, _ = w.Write([]byte("ok"))
}

func (h *webhook) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.messages...)
}

// A failed run posts one message; further failures of the same sync post nothing until it
// has succeeded once; then a failure posts again. The webhook URL (a secret) is in no log.
func TestNotifyOncePerFailureStreak(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		hook := &webhook{}
		srv := httptest.NewServer(hook)
		defer srv.Close()
		const secretPath = "/hooks/T000-secret-token"
		b := setup(t, backend)
		dir := t.TempDir()
		path := filepath.Join(dir, "crm.csv")
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path}}}
		b.cfg.Notify = jobs.NotifySpec{WebhookURL: srv.URL + secretPath}
		rt := b.open(t)

		syncNow := func(wantState state.RunState) {
			t.Helper()
			id, err := rt.EnqueueSync(ctx, "crm", false)
			require.NoError(t, err)
			run, _ := rt.Wait(ctx, id, nil)
			require.Equal(t, wantState, run.State, run.Error)
		}
		// The source file is missing: the run fails at once.
		syncNow(state.RunFailed)
		msgs := hook.got()
		require.Len(t, msgs, 1)
		require.Contains(t, msgs[0], `sync "crm" failed`)
		syncNow(state.RunFailed)
		require.Len(t, hook.got(), 1, "the same failure streak is told once")

		require.NoError(t, os.WriteFile(path, []byte("email\nkari@example.com\n"), 0o600))
		syncNow(state.RunCompleted)
		require.Len(t, hook.got(), 1, "a success posts nothing")
		require.NoError(t, os.Remove(path))
		syncNow(state.RunFailed)
		require.Len(t, hook.got(), 2, "a new streak after a success is told")
		require.NotContains(t, b.logs.String(), "T000-secret-token")
	})
}

// Write-back that fails on two status pulls in a row is told once; a third failure posts
// nothing more.
func TestNotifyWriteBackKeepsFailing(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		hook := &webhook{}
		srv := httptest.NewServer(hook)
		defer srv.Close()
		b := setup(t, backend)
		b.subscribe(t, "a@example.com")
		require.NoError(t, b.emu.SetStatus("a@example.com", b.listID, "unsubscribed"))
		// The CSV file's directory is a file: the write-back cannot be written.
		blocker := filepath.Join(t.TempDir(), "blocker")
		require.NoError(t, os.WriteFile(blocker, nil, 0o600))
		b.cfg.StatusPull.WriteBack = jobs.WriteBackSpec{Kind: jobs.WriteBackCSV, Path: filepath.Join(blocker, "changes.csv")}
		b.cfg.Notify = jobs.NotifySpec{WebhookURL: srv.URL}
		rt := b.open(t)
		pull := func() {
			t.Helper()
			id, err := rt.EnqueueStatusPull(ctx)
			require.NoError(t, err)
			run, err := rt.Wait(ctx, id, nil)
			require.NoError(t, err)
			require.Equal(t, state.RunCompleted, run.State)
			require.Contains(t, run.Error, "retried on the next pull")
		}
		pull()
		require.Empty(t, hook.got(), "one failure is retried by the next pull")
		pull()
		msgs := hook.got()
		require.Len(t, msgs, 1)
		require.Contains(t, msgs[0], "write-back keeps failing")
		pull()
		require.Len(t, hook.got(), 1)
	})
}
