package web_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/browser"
	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/web"
)

// TestRunPageCountsLearntSuppressions: against a service that revives people on a push
// without a status, the first import of a file of a list's 50 people who unsubscribed and 20
// who bounced long ago (not in the status feed), and 10 new ones, makes none of them active,
// and its run page, in Chromium, counts the 70 as suppressed; on SQLite and Postgres.
func TestRunPageCountsLearntSuppressions(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var offset atomic.Int64
			clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			emu := sinktest.NewServer(t, sinktest.WithOmissionRevives(true), sinktest.WithClock(clock))
			list := emu.CreateList("Nyhetsbrev")
			sc := sink.Config{BaseURL: emu.URL, UserID: emu.User, APIKey: emu.Key, RequestsPerSecond: -1, HTTPClient: emu.Client()}
			c, err := sink.New(sc)
			require.NoError(t, err)
			offset.Store(int64(-41 * 24 * time.Hour))
			var file strings.Builder
			file.WriteString("E-post;Fornavn\n")
			people := make([]sink.Subscriber, 70)
			for i := range 80 {
				email := fmt.Sprintf("p%d@example.no", i+1)
				fmt.Fprintf(&file, "%s;P%d\n", email, i+1)
				if i < 70 {
					people[i] = sink.Subscriber{Email: email}
				}
			}
			_, err = c.BulkInsert(ctx, sink.BulkOptions{ListID: list}, people)
			require.NoError(t, err)
			offset.Store(int64(-40 * 24 * time.Hour))
			for i := range 70 {
				require.NoError(t, emu.SetStatus(people[i].Email, list, []string{"unsubscribed", "bounce"}[i/50]))
			}
			offset.Store(0)
			dir := t.TempDir()
			path := filepath.Join(dir, "medlemmer.csv")
			require.NoError(t, os.WriteFile(path, []byte(file.String()), 0o600))

			cfg := jobs.Config{DataDir: dir, LeaseTTL: time.Second, PollInterval: 20 * time.Millisecond,
				ShutdownTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler), Sink: sc}
			if backend == "postgres" {
				cfg.DatabaseURL, _ = testdb.PostgresSchema(t)
			}
			rt, err := jobs.Open(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(rt.Close)
			id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: list})
			require.NoError(t, err)
			run, err := rt.Wait(ctx, id, nil)
			require.NoError(t, err)
			for _, p := range people {
				s, _ := emu.SubscriberByEmail(p.Email)
				require.NotEqual(t, "active", s.Lists[list].Status, p.Email)
			}

			pages, err := web.New(rt, web.Options{Password: password})
			require.NoError(t, err)
			srv := httptest.NewServer(pages)
			defer srv.Close()
			b := browser.Start(t)
			p := b.NewPage(map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+password))})
			require.Equal(t, 200, p.Navigate(fmt.Sprintf("%s/runs/%d", srv.URL, run.ID)))
			counts := p.Text("#counts")
			require.Contains(t, counts, "Suppressed\t70")
			require.Contains(t, counts, "Sent\t10")
		})
	}
}
