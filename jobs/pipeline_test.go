package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// heldCall is one InsertBatch the stub holds until the test answers it.
type heldCall struct {
	rows   []sink.Subscriber
	answer chan error
}

// holdingSender is a batchSender whose calls wait for the test. When refuse is set, an
// acknowledged call reports the rows it names as refused by the service.
type holdingSender struct {
	calls  chan heldCall
	refuse func(sink.Subscriber) bool
}

func (s *holdingSender) InsertBatch(ctx context.Context, _ sink.BulkOptions, rows []sink.Subscriber) (sink.BatchResult, error) {
	c := heldCall{rows: rows, answer: make(chan error)}
	select {
	case s.calls <- c:
	case <-ctx.Done():
		return sink.BatchResult{}, ctx.Err()
	}
	if err := <-c.answer; err != nil {
		return sink.BatchResult{Requests: 1}, err
	}
	res := sink.BatchResult{Sent: len(rows), Requests: 1}
	for i, r := range rows {
		if s.refuse != nil && s.refuse(r) {
			res.Sent--
			res.Rejects = append(res.Rejects, sink.RowReject{Index: i, Email: r.Email, Reason: "refused"})
		}
	}
	return res, nil
}

// TestPipelineOrdersDuplicates: a row whose e-mail is in a sent, unacknowledged batch waits
// for that batch's acknowledgement, so the last row for an e-mail wins; and the checkpoint
// never passes an unacknowledged batch.
func TestPipelineOrdersDuplicates(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	var b strings.Builder
	b.WriteString("E-post,Fornavn\n")
	for i := 1; i <= 2500; i++ {
		if i == 2400 {
			b.WriteString("person10@example.com,Later\n") // the same person as row 10
			continue
		}
		fmt.Fprintf(&b, "person%d@example.com,Ola%d\n", i, i)
	}
	sender := &holdingSender{calls: make(chan heldCall)}
	p, store, run := testPipeline(t, b.String(), sender)
	p.windowSize = 4
	waits := make(chan int, 16)
	p.onConflictWait = func(seq int) { waits <- seq }
	done := make(chan error, 1)
	go func() { done <- p.run(ctx, 0) }()

	// The first two batches go out together, in either order.
	first, second := <-sender.calls, <-sender.calls
	if first.rows[0].Email != "person1@example.com" {
		first, second = second, first
	}
	require.Equal(t, 1000, len(first.rows))
	require.Equal(t, "Ola10", first.rows[9].Firstname)
	require.Equal(t, 1000, len(second.rows))
	// The last batch holds person10 again: it waits for the first batch, however long.
	require.Equal(t, 3, <-waits)
	second.answer <- nil
	require.Equal(t, 3, <-waits, "still waiting after another batch's acknowledgement")
	got, err := store.Run(ctx, run.ID)
	require.NoError(t, err)
	require.Zero(t, got.Position, "the checkpoint does not pass the unacknowledged first batch")

	first.answer <- nil
	third := <-sender.calls
	require.Equal(t, 500, len(third.rows))
	later := third.rows[indexOf(third.rows, "person10@example.com")]
	require.Equal(t, "Later", later.Firstname)
	third.answer <- nil
	require.NoError(t, <-done)

	got, err = store.Run(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, int64(2500), got.Position)
	require.Equal(t, state.Counts{Read: 2500, Duplicates: 1, Sent: 2500, Batches: 3, Requests: 3}, got.Counts)
}

// recordingSender acknowledges every batch at once and keeps the e-mails in the order sent.
type recordingSender struct {
	mu     sync.Mutex
	emails []string
}

func (s *recordingSender) InsertBatch(_ context.Context, _ sink.BulkOptions, rows []sink.Subscriber) (sink.BatchResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rows {
		s.emails = append(s.emails, r.Email)
	}
	return sink.BatchResult{Sent: len(rows), Requests: 1}, nil
}

// TestPipelineKeepsSourceOrder: records are mapped on several goroutines, a chunk each, and
// still come out in source order (the deduper's "last row wins" and the checkpoints rely on
// it), rejects included.
func TestPipelineKeepsSourceOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 25_500
	var b strings.Builder
	b.WriteString("E-post,Fornavn\n")
	for i := 1; i <= n; i++ {
		if i%1000 == 7 {
			fmt.Fprintf(&b, "not-an-address-%d,Feil\n", i)
			continue
		}
		fmt.Fprintf(&b, "person%d@example.com,Ola%d\n", i, i)
	}
	sender := &recordingSender{}
	p, store, run := testPipeline(t, b.String(), sender)
	p.windowSize = 1
	require.NoError(t, p.run(ctx, 0))

	var want []string
	for i := 1; i <= n; i++ {
		if i%1000 != 7 {
			want = append(want, fmt.Sprintf("person%d@example.com", i))
		}
	}
	require.Equal(t, want, sender.emails)
	var lines, wantLines []int
	require.NoError(t, store.Rejects(ctx, run.ID, func(rj state.Reject) error {
		lines = append(lines, rj.Line)
		return nil
	}))
	for i := 7; i <= n; i += 1000 {
		wantLines = append(wantLines, i+1) // after the header
	}
	require.Equal(t, wantLines, lines)
	got, err := store.Run(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, int64(n), got.Position)
	require.Equal(t, state.Counts{Read: n, Sent: int64(len(want)), Rejected: int64(len(wantLines)), Batches: 26, Requests: 26}, got.Counts)
}

// testPipeline is a pipeline of an import of the CSV text, its columns mapped by name, on
// a fresh SQLite store, with three goroutines mapping; the caller sets its window.
func testPipeline(t *testing.T, csvText string, sender batchSender) (*pipeline, *state.Store, state.Run) {
	t.Helper()
	store, run := testRun(t)
	return testPipelineOn(t, store, run, csvText, sender), store, run
}

// testPipelineOn is testPipeline on a given store and run (an attempt resuming it).
func testPipelineOn(t *testing.T, store *state.Store, run state.Run, csvText string, sender batchSender) *pipeline {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "contacts.csv")
	require.NoError(t, os.WriteFile(path, []byte(csvText), 0o600))
	r, err := sources.Open(ctx, sources.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	spec, _ := mapping.Spec{}.WithAuto(r.Header())
	m, err := mapping.Compile(spec, r.Header(), mapping.Fields{})
	require.NoError(t, err)
	return &pipeline{store: store, sender: sender, log: slog.New(slog.DiscardHandler), reader: r, mapper: m,
		mapWorkers: 3, dedupe: m.NewDeduper(), mappingFP: m.Fingerprint(), listID: 7, runID: run.ID, owner: "o",
		ttl: time.Minute, suppressionMode: SuppressionSkip, fps: state.NewFingerprintSet(7), fpFlush: 1 << 20,
		stopping: make(chan struct{})}
}

// testRun is a fresh SQLite store holding one claimed import run.
func testRun(t *testing.T) (*state.Store, state.Run) {
	t.Helper()
	ctx := context.Background()
	db, err := state.OpenSQLite(ctx, filepath.Join(t.TempDir(), "subsync.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = state.Migrate(ctx, db, state.SQLite)
	require.NoError(t, err)
	store := state.New(db, state.SQLite)
	run, err := store.ClaimRun(ctx, state.Claim{JobID: 1, Kind: KindImport, Owner: "o", TTL: time.Minute})
	require.NoError(t, err)
	return store, run
}

func indexOf(rows []sink.Subscriber, email string) int {
	for i, r := range rows {
		if r.Email == email {
			return i
		}
	}
	return -1
}

// blockingReader returns n rows, then blocks until ctx ends.
type blockingReader struct {
	n, i int
}

func (r *blockingReader) Header() []string { return []string{"E-post"} }
func (r *blockingReader) Next(ctx context.Context) (sources.Record, error) {
	if r.i < r.n {
		r.i++
		return sources.Record{Ordinal: int64(r.i), Line: r.i + 1, Values: []string{fmt.Sprintf("p%d@example.com", r.i)}}, nil
	}
	<-ctx.Done()
	return sources.Record{}, ctx.Err()
}
func (r *blockingReader) Progress() sources.Progress { return sources.Progress{Rows: int64(r.i)} }
func (r *blockingReader) Close() error               { return nil }

// TestPipelineCancelledIsNotComplete: a run whose context ends while it reads returns the
// context's error, never success with the rows read so far.
func TestPipelineCancelledIsNotComplete(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithCancel(context.Background())
	store, run := testRun(t)
	r := &blockingReader{n: 10}
	spec, _ := mapping.Spec{}.WithAuto(r.Header())
	m, err := mapping.Compile(spec, r.Header(), mapping.Fields{})
	require.NoError(t, err)
	sender := &holdingSender{calls: make(chan heldCall)}
	p := &pipeline{store: store, sender: sender, log: slog.New(slog.DiscardHandler), reader: r, mapper: m,
		dedupe: m.NewDeduper(), mappingFP: m.Fingerprint(), listID: 7, runID: run.ID, owner: "o", ttl: time.Minute,
		windowSize: 4, suppressionMode: SuppressionSkip, fps: state.NewFingerprintSet(7), fpFlush: 1 << 20,
		stopping: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- p.run(ctx, 0) }()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	got, err := store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Zero(t, got.Position)
}

// TestPipelineSendsRowsAsMapped: every row is sent as Map makes it, also when its batch goes
// out after the chunk it was mapped in was recycled and the next records were mapped in the
// same memory (the values mapping makes, a lower-cased address, a phone number, dates and
// the consent and custom fields, live in the chunk's Arena until a batch adopts them).
func TestPipelineSendsRowsAsMapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 5_500 // six batches, six chunks
	var b strings.Builder
	b.WriteString("E-post,Fornavn,Mobil,Fødselsdato,Nyhetsbrev,Innmeldt\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "Person%d@Example.COM,Ola%d,9%07d,%d.%d.19%02d,%s,0%d.03.2020\n",
			i, i, i, i%28+1, i%12+1, i%100, []string{"ja", "nei", ""}[i%3], i%9+1)
	}
	sender := &holdingSender{calls: make(chan heldCall)}
	p, _, _ := testPipeline(t, b.String(), sender)
	spec, err := mapping.ParseSpec([]byte(`
[columns]
"E-post" = "email"
Fornavn = "firstname"
Mobil = "phone"
"Fødselsdato" = "birthday"
Nyhetsbrev = "SAMTYKKEEPOST"
Innmeldt = "custom:Innmeldt"
`))
	require.NoError(t, err)
	m, err := mapping.Compile(spec, p.reader.Header(), mapping.NewFields([]sink.CustomField{
		{ID: 1, Label: "Innmeldt", Value: "EXTRA5", Datatype: sink.DatatypeDate}}))
	require.NoError(t, err)
	p.mapper, p.dedupe, p.mappingFP = m, m.NewDeduper(), m.Fingerprint()
	p.windowSize = 8 // every batch goes out while the next chunks are mapped
	done := make(chan error, 1)
	go func() { done <- p.run(ctx, 0) }()
	var calls []heldCall
	for range 6 { // the chunks of the first five batches are recycled by now
		calls = append(calls, <-sender.calls)
	}
	var sent []sink.Subscriber // the rows as they are now, before any batch is acknowledged
	for _, c := range calls {
		for _, r := range c.rows {
			r.Fields = slices.Clone(r.Fields)
			sent = append(sent, r)
		}
	}
	for _, c := range calls {
		c.answer <- nil
	}
	require.NoError(t, <-done)

	// What Map makes of each record, read again from the same text.
	path := filepath.Join(t.TempDir(), "again.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	r, err := sources.Open(ctx, sources.Config{Path: path})
	require.NoError(t, err)
	defer r.Close()
	var want []sink.Subscriber
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		row, rej := m.Map(rec)
		require.Nil(t, rej)
		want = append(want, row.Sub)
	}
	require.Len(t, want, n)
	require.Len(t, sent, n)
	// The batches of the two status groups (a "nei" unsubscribes) went out in either order.
	byEmail := func(a, b sink.Subscriber) int { return strings.Compare(a.Email, b.Email) }
	slices.SortFunc(want, byEmail)
	slices.SortFunc(sent, byEmail)
	for i := range want {
		require.Equal(t, want[i], sent[i])
	}
}

// TestPipelineKeepsValuesMappingMade: what mapping makes in a chunk's memory and the run
// keeps after the chunk is recycled is kept whole: tags whose spaces were collapsed, in
// batches held until every chunk is done; the value of a reject, written at a checkpoint
// after that: a lower-cased duplicate e-mail, a tag too long.
func TestPipelineKeepsValuesMappingMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var b strings.Builder
	b.WriteString("E-post,Grupper\n")
	longTag := strings.Repeat("ab  ", 40) + "c" // 121 characters once collapsed
	for i := 1; i <= 3000; i++ {
		email := fmt.Sprintf("Person%d@Example.COM", (i-1)%2000+1) // rows 2001-3000 repeat 1-1000
		tags := "VIP;Nye  kunder"
		if i%500 == 3 {
			tags = "VIP;" + longTag
		}
		fmt.Fprintf(&b, "%s,%s\n", email, tags)
	}
	sender := &holdingSender{calls: make(chan heldCall)}
	p, store, run := testPipeline(t, b.String(), sender)
	spec, err := mapping.ParseSpec([]byte(`
duplicates = "reject"
[columns]
"E-post" = "email"
Grupper = { to = "tags", separator = ";" }
`))
	require.NoError(t, err)
	m, err := mapping.Compile(spec, p.reader.Header(), mapping.Fields{})
	require.NoError(t, err)
	p.mapper, p.dedupe, p.mappingFP = m, m.NewDeduper(), m.Fingerprint()
	p.windowSize = 8
	done := make(chan error, 1)
	go func() { done <- p.run(ctx, 0) }()
	calls := []heldCall{<-sender.calls, <-sender.calls} // 1996 rows: rows 3, 503, 1003 and 1503 are rejected
	sent := 0
	for _, c := range calls {
		for _, r := range c.rows {
			require.Equal(t, []string{"VIP", "Nye kunder"}, r.Tags, r.Email)
			sent++
		}
	}
	require.Equal(t, 1996, sent)
	for _, c := range calls {
		c.answer <- nil
	}
	require.NoError(t, <-done)

	var tooLong, dups int
	require.NoError(t, store.Rejects(ctx, run.ID, func(rj state.Reject) error {
		i := rj.Line - 1
		switch rj.Code {
		case mapping.CodeTooLong:
			require.Equal(t, 3, i%500, "line %d", rj.Line)
			require.True(t, strings.HasPrefix(rj.Value, "ab ab ab"), "line %d: %q", rj.Line, rj.Value)
			tooLong++
		case mapping.CodeDuplicateEmail:
			require.Equal(t, fmt.Sprintf("person%d@example.com", i-2000), rj.Value, "line %d", rj.Line)
			dups++
		default:
			t.Fatalf("line %d: %+v", rj.Line, rj)
		}
		return nil
	}))
	require.Equal(t, 6, tooLong)
	require.Equal(t, 1000-2, dups) // rows 2003 and 2503 are too long first
}

// TestPipelineResumedBooksAreExact: with rows of two status groups interleaved, an
// acknowledged batch can be partly under a checkpoint while a batch of the other group is
// open; when the worker dies then, the rows of that part are not sent again by the attempt
// that resumes, so they must have been counted (and their refused rows recorded) by the
// checkpoint. The books of the run come out exact: every row counted once.
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
	refuse := func(s sink.Subscriber) bool { return s.Firstname == "Nekt" }
	withSpec := func(p *pipeline) *pipeline {
		m, err := mapping.Compile(spec, p.reader.Header(), mapping.Fields{})
		require.NoError(t, err)
		p.mapper, p.dedupe, p.mappingFP = m, m.NewDeduper(), m.Fingerprint()
		p.windowSize = 4
		return p
	}

	// The first attempt: the first batch of the consenting group (rows 1 to 1333 but every
	// fourth) is acknowledged while row 4's group is not sent yet; the checkpoint moves to
	// row 3, and the worker dies.
	sender := &holdingSender{calls: make(chan heldCall), refuse: refuse}
	store, run := testRun(t)
	p := withSpec(testPipelineOn(t, store, run, b.String(), sender))
	commits := make(chan state.Counts, 16)
	p.onCommit = func(c state.Counts) { commits <- c }
	ctx, kill := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.run(ctx, 0) }()
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

	// The next attempt resumes after row 3 and sends the rest.
	rec := &recordingSender{}
	p = withSpec(testPipelineOn(t, store, run, b.String(), rec))
	require.NoError(t, p.run(context.Background(), got.Position))
	require.NotContains(t, rec.emails, "person3@example.com")
	require.Contains(t, rec.emails, "person5@example.com")

	got, err = store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, int64(n), got.Position)
	// Batches: the first attempt's, counted with rows 1 to 3, and the second attempt's 4.
	require.Equal(t, state.Counts{Read: n, Sent: n - 1, Rejected: 1, Batches: 5, Requests: 5}, got.Counts)
	var rejects []state.Reject
	require.NoError(t, store.Rejects(context.Background(), run.ID, func(rj state.Reject) error {
		rejects = append(rejects, rj)
		return nil
	}))
	require.Len(t, rejects, 1)
	require.Equal(t, 3, rejects[0].Line)
	require.Equal(t, state.CodeRefused, rejects[0].Code)
	require.Equal(t, "person2@example.com", rejects[0].Value)
}

// TestPipelineCountsRequestsWaitedOut: a batch the service answers with a Retry-After longer
// than the client waits ends the attempt (the job snoozes); its requests are counted all the
// same, and the one answered with the wait as a retry, for the next attempt repeats it.
func TestPipelineCountsRequestsWaitedOut(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("E-post\n")
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&b, "person%d@example.com\n", i)
	}
	sender := &holdingSender{calls: make(chan heldCall)}
	p, store, run := testPipeline(t, b.String(), sender)
	p.windowSize = 4
	done := make(chan error, 1)
	go func() { done <- p.run(context.Background(), 0) }()
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
