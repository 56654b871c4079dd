package jobs_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/state"
)

// consentContacts writes a CSV of n contacts with a consent column: every third says "nei"
// (the row goes in the unsubscribed status group), the others "ja", so the rows of two
// status groups are interleaved; rows with invalid(i) have an address that is not one.
func consentContacts(t *testing.T, n int, invalid func(i int) bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "consent.csv")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "E-post,Fornavn,SAMTYKKEEPOST")
	for i := 1; i <= n; i++ {
		email, consent := fmt.Sprintf("person%d@example.com", i), "ja"
		if invalid(i) {
			email = fmt.Sprintf("person%d-at-example.com", i)
		}
		if i%3 == 0 {
			consent = "nei"
		}
		fmt.Fprintf(w, "%s,Ola%d,%s\n", email, i, consent)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return path
}

// snooze makes the service answer every request 429 with a Retry-After longer than the
// worker waits, until the run is paused (the job snoozes); then the service answers again.
func snooze(t *testing.T, b *bundle, st *state.Store, jobID int64, normal sinktest.Faults) {
	t.Helper()
	f := normal
	f.TooManyRate, f.ErrorRate, f.DropRate, f.RetryAfter = 1, 0, 0, time.Second
	b.emu.SetFaults(f)
	waitFor(t, time.Minute, "the run to snooze", func() bool { return runOf(t, st, jobID).State == state.RunRetrying })
	b.emu.SetFaults(normal)
}

// requireExactBooks checks a completed run's books against what the service received: every
// valid row counted once as sent, every invalid one once as rejected (and exported once),
// every request counted no more than made.
func requireExactBooks(t *testing.T, b *bundle, rt *jobs.Runtime, jobID int64, n int, invalid func(int) bool) state.Run {
	t.Helper()
	ctx := context.Background()
	run := runOf(t, rt.State(), jobID)
	require.Equal(t, state.RunCompleted, run.State)
	nInvalid := 0
	wantLines := map[int]bool{}
	for i := 1; i <= n; i++ {
		if invalid(i) {
			nInvalid++
			wantLines[i+1] = true
		}
	}
	require.Equal(t, int64(n), run.Position)
	require.Equal(t, int64(n), run.Counts.Read)
	require.Equal(t, int64(n-nInvalid), run.Counts.Sent, "sent: every row delivered, counted once")
	require.Equal(t, int64(nInvalid), run.Counts.Rejected)
	require.Len(t, b.emu.ListSubscribers(b.listID), n-nInvalid)

	acked, _ := bulkRows(b.emu)
	requests, _ := bulkRequests(b.emu, b.listID)
	_, ackedRequests := bulkRows(b.emu)
	require.GreaterOrEqual(t, run.Counts.Batches, int64((n-nInvalid+999)/1000))
	require.LessOrEqual(t, run.Counts.Batches, int64(ackedRequests), "no batch counted twice")
	require.GreaterOrEqual(t, run.Counts.Requests, run.Counts.Batches)
	require.LessOrEqual(t, run.Counts.Requests, int64(requests), "no request counted twice")
	t.Logf("rows acknowledged %d for %d valid rows; batches %d; requests %d (counted %d), retries counted %d",
		acked, n-nInvalid, run.Counts.Batches, requests, run.Counts.Requests, run.Counts.Retries)

	gotLines := map[int]bool{}
	require.NoError(t, rt.State().Rejects(ctx, run.ID, func(rj state.Reject) error {
		require.False(t, gotLines[rj.Line], "line %d exported twice", rj.Line)
		gotLines[rj.Line] = true
		return nil
	}))
	require.Equal(t, wantLines, gotLines, "the rejects export holds exactly the refused rows")
	return run
}

// TestKillsAndSnoozesKeepExactBooks: an import of rows in two status groups, interleaved
// ("ja" and "nei"), is killed three times (SIGKILL) and snoozed twice on a Retry-After; it
// completes with books that show exactly the rows delivered and the rows refused.
func TestKillsAndSnoozesKeepExactBooks(t *testing.T) {
	// Not parallel with the other tests: these worker processes take the machine for a
	// while, and the timings of the other kill tests would suffer.

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		normal := sinktest.Faults{Latency: 150 * time.Millisecond}
		b := setup(t, backend, sinktest.WithFaults(normal))
		b.cfg.Sink.RetryAfterCap = 500 * time.Millisecond
		const n = 60_000
		invalid := func(i int) bool { return i%997 == 0 }
		path := consentContacts(t, n, invalid)
		rt := b.open(t)
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)
		sentAtLeast := func(rows int) func() bool {
			return func() bool { return sentRows(b.emu, b.listID) >= rows }
		}

		w := startWorker(t, b)
		waitFor(t, time.Minute, "6,000 rows sent", sentAtLeast(6_000))
		w.kill(t)
		w = startWorker(t, b)
		waitFor(t, time.Minute, "14,000 rows sent", sentAtLeast(14_000))
		snooze(t, b, rt.State(), jobID, normal)
		waitFor(t, time.Minute, "22,000 rows sent", sentAtLeast(22_000))
		w.kill(t)
		w = startWorker(t, b)
		waitFor(t, time.Minute, "30,000 rows sent", sentAtLeast(30_000))
		snooze(t, b, rt.State(), jobID, normal)
		waitFor(t, time.Minute, "38,000 rows sent", sentAtLeast(38_000))
		w.kill(t)
		w = startWorker(t, b)
		waitFor(t, 2*time.Minute, "the run to complete", func() bool {
			return runOf(t, rt.State(), jobID).State == state.RunCompleted
		})
		w.stop(t, 30*time.Second)

		run := requireExactBooks(t, b, rt, jobID, n, invalid)
		require.GreaterOrEqual(t, run.Attempts, 6, "three kills, two snoozes")
		require.GreaterOrEqual(t, run.Counts.Retries, int64(2), "the 429s waited out by snoozing")
		unsubscribed := 0
		for _, s := range b.emu.ListSubscribers(b.listID) {
			if s.Lists[b.listID].Status == sink.StatusUnsubscribed {
				unsubscribed++
			}
		}
		require.Equal(t, n/3-n/3/997, unsubscribed, "every \"nei\" row unsubscribed") // i%2991==0 are both
	})
}

// TestFaultMatrixKeepsExactBooks: 200,000 valid rows through a service that answers 20% of
// requests 5xx, 10% 429 with Retry-After and drops 5% of connections after applying them,
// with the worker killed twice: every row is delivered, and the books are exact.
func TestFaultMatrixKeepsExactBooks(t *testing.T) {
	// Not parallel with the other tests: these worker processes take the machine for a
	// while, and the timings of the other kill tests would suffer.

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		faults := sinktest.Faults{Seed: 19, Latency: 5 * time.Millisecond, ErrorRate: 0.2, TooManyRate: 0.1,
			RetryAfter: time.Second, DropRate: 0.05}
		b := setup(t, backend, sinktest.WithFaults(faults))
		b.cfg.BatchesInFlight = 8
		b.cfg.Sink.MaxAttempts = 30 // a batch meets a fault one request in three
		const n = 200_000
		valid := func(int) bool { return false }
		path := consentContacts(t, n, valid)
		rt := b.open(t)
		start := time.Now()
		jobID, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID})
		require.NoError(t, err)

		w := startWorker(t, b)
		waitFor(t, 2*time.Minute, "60,000 rows sent", func() bool { return sentRows(b.emu, b.listID) >= 60_000 })
		w.kill(t)
		w = startWorker(t, b)
		waitFor(t, 2*time.Minute, "130,000 rows sent", func() bool { return sentRows(b.emu, b.listID) >= 130_000 })
		w.kill(t)
		w = startWorker(t, b)
		waitFor(t, 3*time.Minute, "the run to complete", func() bool {
			return runOf(t, rt.State(), jobID).State == state.RunCompleted
		})
		w.stop(t, 30*time.Second)
		took := time.Since(start)

		run := requireExactBooks(t, b, rt, jobID, n, valid)
		var faulted = map[string]int{}
		for _, r := range b.emu.Requests() {
			if r.Path == sinktest.V2Prefix+"/subscribers/bulkinsert" && r.Fault != "" {
				faulted[r.Fault]++
			}
		}
		t.Logf("%s: %d rows in %s with two kills; attempts %d; faults %v", backend, n, took.Round(time.Millisecond),
			run.Attempts, faulted)
		require.Positive(t, run.Counts.Retries)
	})
}
