package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// holdingSender is a Sender whose calls wait for the test. When refuse is set, an
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
	cfg, store, run := testPipeline(t, b.String(), sender)
	cfg.Window = 4
	waits := make(chan int, 16)
	cfg.OnConflictWait = func(seq int) { waits <- seq }
	p := newEngine(t, cfg)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, 0) }()

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
	cfg, store, run := testPipeline(t, b.String(), sender)
	cfg.Window = 1
	require.NoError(t, newEngine(t, cfg).Run(ctx, 0))

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

// testPipeline is the Config of an import of the CSV text, its columns mapped by name, on
// a fresh SQLite store, with three goroutines mapping; the caller sets its window.
func testPipeline(t *testing.T, csvText string, sender Sender) (Config, *state.Store, state.Run) {
	t.Helper()
	store, run := testRun(t)
	return testPipelineOn(t, store, run, csvText, sender), store, run
}

// testPipelineOn is testPipeline on a given store and run (an attempt resuming it).
func testPipelineOn(t *testing.T, store *state.Store, run state.Run, csvText string, sender Sender) Config {
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
	return Config{Store: StateStore(store), Sender: sender, Reader: r, Mapper: m, MapWorkers: 3, ListID: 7,
		RunID: run.ID, Owner: "o", LeaseTTL: time.Minute, FingerprintFlush: 1 << 20, Stopping: make(chan struct{})}
}

// withMapping compiles the mapping spec for cfg's source.
func withMapping(t *testing.T, cfg *Config, spec mapping.Spec, fields mapping.Fields) {
	t.Helper()
	m, err := mapping.Compile(spec, cfg.Reader.Header(), fields)
	require.NoError(t, err)
	cfg.Mapper = m
}

// newEngine is New, required to succeed.
func newEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	require.NoError(t, err)
	return e
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
	run, err := store.ClaimRun(ctx, state.Claim{JobID: 1, Kind: state.KindImport, Owner: "o", TTL: time.Minute})
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
	p := newEngine(t, Config{Store: StateStore(store), Sender: sender, Reader: r, Mapper: m, ListID: 7,
		RunID: run.ID, Owner: "o", LeaseTTL: time.Minute, Window: 4, Stopping: make(chan struct{})})
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, 0) }()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	got, err := store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Zero(t, got.Position)
}
