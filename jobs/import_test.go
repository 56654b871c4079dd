package jobs_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/export"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/state"
)

func TestImportWait(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		const n = 5_500
		invalid := func(i int) bool { return i%1000 == 0 }
		path := contacts(t, t.TempDir(), n, invalid)
		rt := b.open(t)

		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		if backend == "postgres" {
			// On Postgres the file was staged into the database: any worker can read it,
			// whether or not it sees this machine's disk.
			require.NoError(t, os.Remove(path))
		}
		var reports []jobs.Progress
		run, err := rt.Wait(ctx, jobID, func(p jobs.Progress) { reports = append(reports, p) })
		require.NoError(t, err)

		require.Equal(t, state.RunCompleted, run.State)
		require.Equal(t, jobID, run.JobID)
		require.Equal(t, "contacts-5500.csv", run.Name)
		require.Equal(t, int64(n), run.Position)
		require.Equal(t, state.Counts{Read: n, Rejected: 5, Sent: n - 5, Batches: 6, Requests: 6}, run.Counts)
		require.Equal(t, 1, run.Attempts)
		require.Empty(t, run.Error)
		require.NotEmpty(t, reports)
		require.Equal(t, int64(n), reports[len(reports)-1].Rows)

		subs := b.emu.ListSubscribers(b.listID)
		require.Len(t, subs, n-5)
		got, ok := b.emu.SubscriberByEmail("person1234@example.com")
		require.True(t, ok)
		require.Equal(t, "Ola1234", got.Fields["firstname"])
		rows, _ := bulkRows(b.emu)
		require.Equal(t, n-5, rows, "every valid row sent once")

		var rejects []state.Reject
		require.NoError(t, rt.State().Rejects(ctx, run.ID, func(r state.Reject) error { rejects = append(rejects, r); return nil }))
		require.Len(t, rejects, 5)
		require.Equal(t, state.Reject{Ordinal: 1000, Line: 1001, Column: "E-post", Value: "person1000-at-example.com",
			Code: "invalid_email", Reason: rejects[0].Reason, Row: `["person1000-at-example.com","Ola1000","Nordmann"]`}, rejects[0])
		var buf bytes.Buffer
		delim, err := rt.State().SourceDelimiter(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, ',', delim, "the source file's delimiter, recorded for the export")
		require.NoError(t, export.Rejects(ctx, rt.State(), run.ID, &buf, export.Options{NoBOM: true}))
		recs, err := csv.NewReader(&buf).ReadAll()
		require.NoError(t, err)
		require.Len(t, recs, 6)
		require.Equal(t, []string{"E-post", "Fornavn", "Etternavn", "subsync:kind", "subsync:line"}, recs[0][:5])
		require.Equal(t, []string{"person1000-at-example.com", "Ola1000", "Nordmann", "rejected", "1001"}, recs[1][:5])

		// The metrics count what the run history counts.
		srv := httptest.NewServer(rt.Handler())
		defer srv.Close()
		body := get(t, srv.URL+"/metrics")
		require.Contains(t, body, fmt.Sprintf(`subsync_rows_total{kind="import",outcome="sent",sync=""} %d`, n-5))
		require.Contains(t, body, `subsync_rows_total{kind="import",outcome="rejected",sync=""} 5`)
		require.Contains(t, body, `subsync_batches_total{kind="import",sync=""} 6`)
		require.Contains(t, body, `subsync_api_responses_total{code="200",method="POST",route="/subscribers/bulkinsert"} 6`)
		require.Contains(t, body, `subsync_run_duration_seconds_count{kind="import",outcome="completed",sync=""} 1`)
		require.Equal(t, "ok\n", get(t, srv.URL+"/healthz"))
	})
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestImportPermanentFailures(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		rt := b.open(t)
		dir := t.TempDir()

		// A mapping that does not fit the file fails the run at once, not after 25 attempts.
		path := contacts(t, dir, 10, nil)
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID,
			Mapping: mustSpec(t, `[columns]
"Mobil" = "phone"
"E-post" = "email"`)})
		require.NoError(t, err)
		run, err := rt.Wait(ctx, jobID, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Equal(t, state.RunFailed, run.State)
		require.Equal(t, 1, run.Attempts)
		require.Contains(t, run.Error, "Mobil")

		// A file that is gone when the worker gets to it.
		path = contacts(t, dir, 20, nil)
		jobID, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID, Shared: true})
		require.NoError(t, err)
		require.NoError(t, os.Remove(path))
		run, err = rt.Wait(ctx, jobID, nil)
		require.ErrorIs(t, err, jobs.ErrRunFailed)
		require.Equal(t, 1, run.Attempts)
		require.Contains(t, run.Error, "contacts-20.csv")
		require.Empty(t, b.emu.ListSubscribers(b.listID))

		// Enqueueing a missing file is refused before anything is queued.
		_, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.ErrorContains(t, err, "contacts-20.csv")
	})
}

func mustSpec(t *testing.T, toml string) *mapping.Spec {
	t.Helper()
	s, err := mapping.ParseSpec([]byte(strings.TrimSpace(toml)))
	require.NoError(t, err)
	return &s
}

// TestSnoozeOnLongRetryAfter: a 429 whose Retry-After exceeds the client's cap snoozes the
// job for that long; the run then resumes and completes.
func TestSnoozeOnLongRetryAfter(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend, sinktest.WithFaults(sinktest.Faults{TooManyRate: 1, RetryAfter: 2 * time.Second}))
		b.cfg.Sink.RetryAfterCap = 500 * time.Millisecond
		rt := b.open(t)
		path := contacts(t, t.TempDir(), 1500, nil)
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)

		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- rt.Run(runCtx) }()
		// Snoozed: queued again for when the service said, without a failed attempt.
		var queued []jobs.JobInfo
		waitFor(t, 30*time.Second, "the job to be snoozed", func() bool {
			queued, err = rt.Jobs(ctx)
			require.NoError(t, err)
			return len(queued) == 1 && queued[0].State != "running" && queued[0].ScheduledAt.After(time.Now())
		})
		require.Empty(t, queued[0].LastError, "a snooze is not an error")
		require.WithinDuration(t, time.Now().Add(2*time.Second), queued[0].ScheduledAt, 1500*time.Millisecond)
		paused := runOf(t, rt.State(), jobID)
		require.Equal(t, state.RunRetrying, paused.State)
		require.Contains(t, paused.Error, "429")

		b.emu.SetFaults(sinktest.Faults{})
		waitFor(t, 30*time.Second, "the run to complete", func() bool {
			return runOf(t, rt.State(), jobID).State == state.RunCompleted
		})
		stop()
		require.NoError(t, <-done)
		run := runOf(t, rt.State(), jobID)
		require.Equal(t, 2, run.Attempts)
		require.Empty(t, run.Error)
		require.Equal(t, int64(1500), run.Counts.Sent)
		require.Len(t, b.emu.ListSubscribers(b.listID), 1500)
		// The books count every request, the 429 that was waited out included (here the list
		// check's, before any batch), and it as repeated.
		requests, refused := bulkRequests(b.emu, b.listID)
		require.Equal(t, int64(requests), run.Counts.Requests)
		require.Equal(t, int64(refused), run.Counts.Retries)
	})
}

// TestCancelRunningImport: cancelling a running import stops it; rows already acknowledged
// stay sent and counted, and the run is recorded as cancelled.
func TestCancelRunningImport(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend, sinktest.WithFaults(sinktest.Faults{Latency: 50 * time.Millisecond}))
		rt := b.open(t)
		path := contacts(t, t.TempDir(), 50_000, nil)
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)

		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- rt.Run(runCtx) }()
		waitFor(t, 30*time.Second, "rows to be sent", func() bool { return runOf(t, rt.State(), jobID).Counts.Sent > 0 })
		require.NoError(t, rt.CancelJob(ctx, jobID))
		waitFor(t, 30*time.Second, "the run to be cancelled", func() bool {
			return runOf(t, rt.State(), jobID).State == state.RunCancelled
		})
		stop()
		require.NoError(t, <-done)

		run := runOf(t, rt.State(), jobID)
		require.Less(t, run.Counts.Sent, int64(50_000))
		require.LessOrEqual(t, run.Counts.Sent, int64(sentRows(b.emu, b.listID)))
		left, err := rt.Jobs(ctx)
		require.NoError(t, err)
		require.Empty(t, left)
		require.ErrorContains(t, rt.CancelJob(ctx, jobID), "already ended")
	})
}

// TestWaitReturnsWhenTheRunEnds: Wait working the job in this process returns when its run
// ends, not at its next poll (PollInterval here is an hour; `subsync import --wait` polls
// every 500 ms by default), and the job is settled: the same sync could be queued at once.
func TestWaitReturnsWhenTheRunEnds(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		b := setup(t, backend)
		b.cfg.PollInterval = time.Hour
		rt := b.open(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: contacts(t, t.TempDir(), 1500, nil), ListID: b.listID})
		require.NoError(t, err)
		run, err := rt.Wait(ctx, jobID, nil)
		require.NoError(t, err, "Wait did not return before its next poll")
		require.Equal(t, state.RunCompleted, run.State)
		require.Equal(t, int64(1500), run.Counts.Sent)
		left, err := rt.Jobs(ctx)
		require.NoError(t, err)
		require.Empty(t, left, "the job is settled when Wait returns")
	})
}
