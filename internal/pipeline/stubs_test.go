package pipeline

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// memStore is a Store in memory: it keeps the checkpoints written, and serves a suppression
// list of e-mail → status.
type memStore struct {
	mu  sync.Mutex
	cps []state.Checkpoint
	sup memSuppressions
}

func (s *memStore) Checkpoint(_ context.Context, cp state.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cps = append(s.cps, cp)
	return nil
}

func (s *memStore) SaveFingerprintsStepped(context.Context, *state.FingerprintSet, func()) error {
	return nil
}
func (s *memStore) SuppressionVersion(context.Context) (int64, error) { return 1, nil }
func (s *memStore) LoadSuppressions(context.Context, int64) (Suppressions, error) {
	return s.sup, nil
}

// total is the sum of the checkpoints written, and the last position.
func (s *memStore) total() (state.Counts, int64, []state.Reject) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c state.Counts
	var pos int64
	var rejects []state.Reject
	for _, cp := range s.cps {
		c, pos = c.Add(cp.Delta), cp.Position
		rejects = append(rejects, cp.Rejects...)
	}
	return c, pos, rejects
}

// memSuppressions is a suppression list: e-mail hash → status.
type memSuppressions map[uint64]string

func (m memSuppressions) Version() int64     { return 1 }
func (m memSuppressions) Len() int           { return len(m) }
func (m memSuppressions) Erased(uint64) bool { return false }
func (m memSuppressions) Status(h uint64) (string, bool) {
	s, ok := m[h]
	return s, ok
}

// sliceReader is a source of the given rows under a header.
type sliceReader struct {
	header []string
	rows   [][]string
	i      int
}

func (r *sliceReader) Header() []string { return r.header }
func (r *sliceReader) Next(context.Context) (sources.Record, error) {
	if r.i >= len(r.rows) {
		return sources.Record{}, io.EOF
	}
	r.i++
	return sources.Record{Ordinal: int64(r.i), Line: r.i + 1, Values: r.rows[r.i-1]}, nil
}
func (r *sliceReader) Progress() sources.Progress { return sources.Progress{Rows: int64(r.i)} }
func (r *sliceReader) Close() error               { return nil }

// people is a source of n e-mails (person<i>@example.com), with bad(i) rows not addresses.
func people(n int, bad func(int) bool) *sliceReader {
	r := &sliceReader{header: []string{"E-post", "Nyhetsbrev"}}
	for i := 1; i <= n; i++ {
		email, consent := fmt.Sprintf("person%d@example.com", i), "ja"
		if bad != nil && bad(i) {
			email = fmt.Sprintf("person%d-at-example.com", i)
		}
		if i%4 == 0 {
			consent = "nei"
		}
		r.rows = append(r.rows, []string{email, consent})
	}
	return r
}

// stubConfig is the Config of a run of the reader on a memStore, mapped by the columns'
// names (Nyhetsbrev is the e-mail consent).
func stubConfig(t *testing.T, r sources.Reader, sender Sender) (Config, *memStore) {
	t.Helper()
	spec, err := mapping.ParseSpec([]byte("[columns]\n\"E-post\" = \"email\"\nNyhetsbrev = \"SAMTYKKEEPOST\"\n"))
	require.NoError(t, err)
	m, err := mapping.Compile(spec, r.Header(), mapping.Fields{})
	require.NoError(t, err)
	store := &memStore{sup: memSuppressions{}}
	return Config{Reader: r, Mapper: m, Sender: sender, Store: store, MapWorkers: 2, ListID: 7, RunID: 1,
		Owner: "o", Window: 2}, store
}

// ackSender acknowledges every batch at once and keeps them.
type ackSender struct {
	mu      sync.Mutex
	batches []sentBatch
}

type sentBatch struct {
	opts   sink.BulkOptions
	emails []string
}

func (s *ackSender) InsertBatch(_ context.Context, opts sink.BulkOptions, rows []sink.Subscriber) (sink.BatchResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := sentBatch{opts: opts}
	for _, r := range rows {
		b.emails = append(b.emails, r.Email)
	}
	s.batches = append(s.batches, b)
	return sink.BatchResult{Sent: len(rows), Requests: 1}, nil
}
