package jobs_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestUnauthorized: a 401 fails the run at once with a message about the credentials, and
// neither the API key nor a source's DSN password is in the logs, the job rows or the state.
func TestUnauthorized(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend, sinktest.WithCredentials(sinktest.DefaultUser, "the-right-key"))
		const apiKey = "sk-live-0123456789abcdef-NOT-FOR-LOGS"
		const dsnPassword = "dsn-Passw0rd-NOT-FOR-LOGS"
		b.cfg.Sink.APIKey = apiKey
		b.cfg.Sources = map[string]sources.Config{"crm": {Kind: sources.KindSQL, Driver: "pgx",
			DSN: "postgres://crm:" + dsnPassword + "@127.0.0.1:1/crm?connect_timeout=1", Query: "SELECT email FROM contacts"}}
		rt := b.open(t)

		path := contacts(t, t.TempDir(), 10, nil)
		importID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		crmID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Source: "crm", ListID: b.listID})
		require.NoError(t, err)

		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- rt.Run(runCtx) }()
		waitFor(t, 30*time.Second, "the import to fail and the crm import to be retried", func() bool {
			return runOf(t, rt.State(), importID).State == state.RunFailed &&
				runOf(t, rt.State(), crmID).State == state.RunRetrying
		})
		stop()
		require.NoError(t, <-done)

		run := runOf(t, rt.State(), importID)
		t.Logf("401: %s", run.Error)
		t.Logf("unreachable source: %s", runOf(t, rt.State(), crmID).Error)
		require.Equal(t, 1, run.Attempts, "a 401 is not retried")
		require.Contains(t, run.Error, "credentials")
		require.Contains(t, run.Error, "401")
		unauthorized := 0
		for _, r := range b.emu.Requests() {
			if r.Status == 401 {
				unauthorized++
			}
		}
		require.Equal(t, 1, unauthorized, "one request, not retried")
		require.Empty(t, b.emu.ListSubscribers(b.listID))

		db := rt.State().DB()
		jobRows := riverJobText(t, db, backend)
		require.Contains(t, jobRows, "cancelled", "the queue gave up on the job at once")
		require.Contains(t, jobRows, `"list_id"`)
		stateRows := stateText(t, db)
		require.Contains(t, stateRows, "credentials")
		require.Contains(t, runOf(t, rt.State(), crmID).Error, "crm", "the source error says which source")

		for name, text := range map[string]string{"logs": b.logs.String(), "job rows": jobRows, "state tables": stateRows} {
			require.NotContains(t, text, apiKey, "API key in the %s", name)
			require.NotContains(t, text, dsnPassword, "DSN password in the %s", name)
		}
	})
}

// riverJobText returns every River job row's state, args, errors and metadata as text.
func riverJobText(t *testing.T, db *sql.DB, backend string) string {
	t.Helper()
	q := "SELECT kind || ' ' || state || ' ' || json(args) || ' ' || coalesce(json(errors), '') || ' ' || json(metadata) FROM river_job"
	if backend == "postgres" {
		q = "SELECT kind || ' ' || state::text || ' ' || args::text || ' ' || coalesce(errors::text, '') || ' ' || metadata::text FROM river_job"
	}
	return queryText(t, db, q)
}

// stateText returns every row of subsync's tables as text.
func stateText(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"subsync_run", "subsync_reject", "subsync_suppression", "subsync_status_change",
		"subsync_status_cursor", "subsync_writeback", "subsync_staged_file", "subsync_watermark"} {
		b.WriteString(queryText(t, db, "SELECT * FROM "+table))
	}
	return b.String()
}

func queryText(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var b strings.Builder
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		require.NoError(t, rows.Scan(ptrs...))
		for _, v := range vals {
			b.WriteString(v.String)
			b.WriteByte('\t')
		}
		b.WriteByte('\n')
	}
	require.NoError(t, rows.Err())
	return b.String()
}

// TestEchoedCredentialsInOtherEncodings: a service that echoes the credentials in other
// encodings than it got them (the key URL-encoded, the Basic token in base64url, the key in
// base64), in a 503 that is retried and then a 401, gets none of them into the logs, the run's
// error or the job rows (#35 point 10). Both queues.
func TestEchoedCredentialsInOtherEncodings(t *testing.T) {
	t.Parallel()
	const key = "k3y/Echo+me=please&NOT-FOR-LOGS"
	token := base64.StdEncoding.EncodeToString([]byte(sinktest.DefaultUser + ":" + key))
	forms := []string{key, url.QueryEscape(key), url.PathEscape(key),
		base64.URLEncoding.EncodeToString([]byte(sinktest.DefaultUser + ":" + key)),
		base64.RawURLEncoding.EncodeToString([]byte(sinktest.DefaultUser + ":" + key)),
		base64.StdEncoding.EncodeToString([]byte(key)), token}
	echo := strings.Join(forms, " | ")
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		e := sinktest.New(sinktest.WithCredentials(sinktest.DefaultUser, key))
		var bulk atomic.Int32
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "bulkinsert") {
				w.Header().Set("Content-Type", "application/json")
				status := http.StatusServiceUnavailable
				if bulk.Add(1) > 1 {
					status = http.StatusUnauthorized
				}
				w.WriteHeader(status)
				msg, _ := json.Marshal(map[string]string{"status": fmt.Sprint(status), "message": "you sent " + echo})
				_, _ = w.Write(msg)
				return
			}
			e.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close)
		list := e.CreateList("Nyhetsbrev")
		b.cfg.Sink.BaseURL, b.cfg.Sink.LegacyBaseURL = hs.URL+sinktest.V2Prefix, hs.URL+sinktest.V3Prefix
		b.cfg.Sink.HTTPClient, b.cfg.Sink.APIKey = hs.Client(), key
		rt := b.open(t)

		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: contacts(t, t.TempDir(), 10, nil), ListID: list})
		require.NoError(t, err)
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		run, err := rt.Wait(waitCtx, id, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Contains(t, run.Error, "401")
		require.Contains(t, run.Error, "you sent xxxxx")
		require.Contains(t, b.logs.String(), "503", "the retried answer was logged")

		db := rt.State().DB()
		for name, text := range map[string]string{"logs": b.logs.String(), "run error": run.Error,
			"job rows": riverJobText(t, db, backend), "state tables": stateText(t, db)} {
			for _, f := range forms {
				require.NotContains(t, text, f, "%s shows %q", name, f)
			}
			require.NotContains(t, text, "NOT-FOR-LOGS", name)
		}
	})
}
