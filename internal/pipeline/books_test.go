package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// TestPipelineResumedBooksAreExact: with rows of two status groups interleaved, an
// acknowledged batch can be partly above a checkpoint while a batch of the other group is
// open; the checkpoint counts it whole (its refused row recorded) and records its rows above
// the position as acknowledged. When the worker dies then, the attempt that resumes sends
// none of that batch's rows again, and the books of the run come out exact: every row counted
// once.
func TestPipelineResumedBooksAreExact(t *testing.T) {
	t.Parallel()
	const n = 3000
	var b strings.Builder
	b.WriteString("E-post,Fornavn,Nyhetsbrev\n")
	for i := 1; i <= n; i++ {
		consent, name := "ja", fmt.Sprintf("Ola%d", i)
		if i%4 == 0 {
			consent = "nei" // unsubscribed: its own status group
		}
		if i == 2 {
			name = "Nekt" // the service refuses this row
		}
		fmt.Fprintf(&b, "person%d@example.com,%s,%s\n", i, name, consent)
	}
	spec, err := mapping.ParseSpec([]byte(`
[columns]
"E-post" = "email"
Fornavn = "firstname"
Nyhetsbrev = "SAMTYKKEEPOST"
`))
	require.NoError(t, err)
	withSpec := func(cfg Config) Config {
		withMapping(t, &cfg, spec, mapping.Fields{})
		cfg.Window = 4
		return cfg
	}

	// The first attempt: the first batch of the consenting group (rows 1 to 1333 but every
	// fourth) is acknowledged while row 4's group is not sent yet; the checkpoint moves to
	// row 3, and the worker dies.
	sender := &holdingSender{calls: make(chan heldCall), refuse: func(s sink.Subscriber) bool { return s.Firstname == "Nekt" }}
	store, run := testRun(t)
	cfg := withSpec(testPipelineOn(t, store, run, b.String(), sender))
	commits := make(chan state.Counts, 16)
	cfg.OnCommit = func(c state.Counts) { commits <- c }
	p := newEngine(t, cfg)
	ctx, kill := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, 0) }()
	var calls []heldCall // the four batches fit in the window
	for range 4 {
		calls = append(calls, <-sender.calls)
	}
	k := slices.IndexFunc(calls, func(c heldCall) bool { return c.rows[0].Email == "person1@example.com" })
	require.GreaterOrEqual(t, k, 0)
	first := calls[k]
	calls = slices.Delete(calls, k, k+1)
	require.Equal(t, "person1333@example.com", first.rows[len(first.rows)-1].Email)
	first.answer <- nil
	<-commits
	kill()
	require.ErrorIs(t, <-done, context.Canceled)
	for _, c := range calls {
		c.answer <- context.Canceled
	}
	got, err := store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, int64(3), got.Position, "row 4's batch holds the checkpoint")

	acked, err := store.AckedAbove(context.Background(), run.ID, got.Position)
	require.NoError(t, err)
	require.Len(t, acked, 1000-3, "the first batch's rows above the checkpoint are recorded")

	// The next attempt resumes after row 3 and sends the rest, not the first batch again.
	rec := &recordingSender{}
	cfg = withSpec(testPipelineOn(t, store, run, b.String(), rec))
	cfg.Done = acked
	p = newEngine(t, cfg)
	require.NoError(t, p.Run(context.Background(), got.Position))
	require.NotContains(t, rec.emails, "person3@example.com")
	require.NotContains(t, rec.emails, "person5@example.com", "acknowledged before the kill")
	require.NotContains(t, rec.emails, "person1333@example.com", "acknowledged before the kill")
	require.Contains(t, rec.emails, "person4@example.com")
	require.Contains(t, rec.emails, "person1334@example.com")
	require.Len(t, rec.emails, n-1000)

	got, err = store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, int64(n), got.Position)
	// Batches: the first attempt's one, and the second attempt's three.
	require.Equal(t, state.Counts{Read: n, Sent: n - 1, Rejected: 1, Batches: 4, Requests: 4}, got.Counts)
	var rejects []state.Reject
	require.NoError(t, store.Rejects(context.Background(), run.ID, func(rj state.Reject) error {
		rejects = append(rejects, rj)
		return nil
	}))
	require.Len(t, rejects, 1)
	require.Equal(t, state.Reject{Ordinal: 2, Line: 3, Value: "person2@example.com", Code: mapping.CodeRefused, Reason: "refused",
		Row: `["person2@example.com","Nekt","ja"]`}, rejects[0])
}

// TestPipelineCountsRequestsWaitedOut: a batch the service answers with a Retry-After longer
// than the client waits ends the attempt (the job snoozes); its requests are counted all the
// same, and the one answered with the wait as a retry, for the next attempt repeats it.
func TestPipelineCountsRequestsWaitedOut(t *testing.T) {
	t.Parallel()
	sender := &holdingSender{calls: make(chan heldCall)}
	cfg, store, run := testPipeline(t, emailsCSV(1500), sender)
	cfg.Window = 4
	p := newEngine(t, cfg)
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background(), 0) }()
	calls := []heldCall{<-sender.calls, <-sender.calls}
	if len(calls[0].rows) != 1000 {
		calls[0], calls[1] = calls[1], calls[0]
	}
	calls[0].answer <- nil
	wait := &sink.APIError{StatusCode: 429, RetryAfter: time.Minute}
	calls[1].answer <- wait
	require.ErrorIs(t, <-done, wait)

	got, err := store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, state.Counts{Read: 1000, Sent: 1000, Batches: 1, Requests: 2, Retries: 1}, got.Counts)
}

// TestPipelineSlotFreedAtAcknowledgement: a batch acknowledged before an earlier one frees its
// slot of the window once its checkpoint (recording it) is written: the next batch goes while
// the earlier one is still unanswered. A worker killed then re-sends only the batches not
// acknowledged, and the books of the resumed run are exact.
func TestPipelineSlotFreedAtAcknowledgement(t *testing.T) {
	t.Parallel()
	const n = 4000
	text := emailsCSV(n)
	sender := &holdingSender{calls: make(chan heldCall)}
	cfg, store, run := testPipeline(t, text, sender)
	cfg.Window = 2
	p := newEngine(t, cfg)
	ctx, kill := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, 0) }()
	next := func(what string) heldCall {
		t.Helper()
		select {
		case c := <-sender.calls:
			return c
		case <-time.After(10 * time.Second):
			t.Fatalf("%s was not sent", what)
			return heldCall{}
		}
	}
	first, second := next("batch 1"), next("batch 2")
	if first.rows[0].Email != "person1@example.com" {
		first, second = second, first
	}
	second.answer <- nil // acknowledged before batch 1
	third := next("batch 3, while batch 1 is unanswered,")
	require.Equal(t, "person2001@example.com", third.rows[0].Email)
	third.answer <- nil
	fourth := next("batch 4, while batch 1 is unanswered,")
	require.Equal(t, "person3001@example.com", fourth.rows[0].Email)

	// The worker dies with batches 1 and 4 unanswered.
	kill()
	require.ErrorIs(t, <-done, context.Canceled)
	first.answer <- context.Canceled
	fourth.answer <- context.Canceled
	got, err := store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Zero(t, got.Position, "batch 1 holds the checkpoint")
	require.Equal(t, state.Counts{Sent: 2000, Batches: 2, Requests: 2}, got.Counts)

	rec := &recordingSender{}
	cfg = testPipelineOn(t, store, run, text, rec)
	cfg.Done, err = store.AckedAbove(context.Background(), run.ID, got.Position)
	require.NoError(t, err)
	require.NoError(t, newEngine(t, cfg).Run(context.Background(), got.Position))
	require.Len(t, rec.emails, 2000, "only batches 1 and 4 are sent again")
	require.Contains(t, rec.emails, "person1@example.com")
	require.Contains(t, rec.emails, "person4000@example.com")
	require.NotContains(t, rec.emails, "person1001@example.com")
	got, err = store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, int64(n), got.Position)
	require.Equal(t, state.Counts{Read: n, Sent: n, Batches: 4, Requests: 4}, got.Counts)
	left, err := store.AckedAbove(context.Background(), run.ID, 0)
	require.NoError(t, err)
	require.Empty(t, left, "the records are dropped once the checkpoint passes them")
}

// emailsCSV is a CSV file of n e-mails, person1@example.com to person<n>@example.com.
func emailsCSV(n int) string {
	var b strings.Builder
	b.WriteString("E-post\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "person%d@example.com\n", i)
	}
	return b.String()
}
