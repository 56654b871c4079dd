package pipeline

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// subscriberSender acknowledges every batch and keeps the subscribers sent.
type subscriberSender struct {
	mu   sync.Mutex
	sent map[string]sink.Subscriber
}

func (s *subscriberSender) InsertBatch(_ context.Context, _ sink.BulkOptions, rows []sink.Subscriber) (sink.BatchResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent == nil {
		s.sent = map[string]sink.Subscriber{}
	}
	for _, r := range rows {
		s.sent[r.Email] = r
	}
	return sink.BatchResult{Sent: len(rows), Requests: 1}, nil
}

// TestPipelineInvalidOptionalValue: a row with a valid e-mail and an invalid phone number is
// rejected under the default mapping, and delivered without the phone number under
// on_invalid = "drop", with a warning (line, column, reason, the row whole) in the run's
// state; the books count it as sent, once.
func TestPipelineInvalidOptionalValue(t *testing.T) {
	t.Parallel()
	const csvText = "E-post,Fornavn,Mobil\nada@example.com,Ada,12345\nbob@example.com,Bob,912 34 567\nnot-an-email,Eve,12\n"
	ctx := context.Background()
	for _, tc := range []struct {
		onInvalid              string
		sent, rejected, warned int
	}{
		{"", 1, 2, 0},
		{mapping.OnInvalidReject, 1, 2, 0},
		{mapping.OnInvalidDrop, 2, 1, 1},
	} {
		t.Run("on_invalid="+tc.onInvalid, func(t *testing.T) {
			t.Parallel()
			sender := &subscriberSender{}
			cfg, store, run := testPipeline(t, csvText, sender)
			spec, err := mapping.ParseSpec([]byte(`columns = { "E-post" = "email", Fornavn = "firstname", Mobil = "phone" }`))
			require.NoError(t, err)
			spec.OnInvalid = tc.onInvalid
			withMapping(t, &cfg, spec, mapping.Fields{})
			require.NoError(t, newEngine(t, cfg).Run(ctx, 0))

			got, err := store.Run(ctx, run.ID)
			require.NoError(t, err)
			require.Equal(t, state.Counts{Read: 3, Sent: int64(tc.sent), Rejected: int64(tc.rejected), Batches: 1, Requests: 1}, got.Counts)
			require.Equal(t, "+4791234567", sender.sent["bob@example.com"].Phone)
			var rejects, warnings []state.Reject
			require.NoError(t, store.Rejects(ctx, run.ID, func(r state.Reject) error { rejects = append(rejects, r); return nil }))
			require.NoError(t, store.Warnings(ctx, run.ID, func(r state.Reject) error { warnings = append(warnings, r); return nil }))
			require.Len(t, rejects, tc.rejected)
			require.Len(t, warnings, tc.warned)
			last := rejects[len(rejects)-1]
			require.Equal(t, mapping.CodeInvalidEmail, last.Code)
			require.Equal(t, `["not-an-email","Eve","12"]`, last.Row, "the rejected row whole")

			ada, delivered := sender.sent["ada@example.com"]
			if tc.onInvalid != mapping.OnInvalidDrop {
				require.False(t, delivered)
				require.Equal(t, mapping.CodeInvalidPhone, rejects[0].Code)
				require.Equal(t, `["ada@example.com","Ada","12345"]`, rejects[0].Row)
				return
			}
			require.True(t, delivered)
			require.Equal(t, "Ada", ada.Firstname)
			require.Empty(t, ada.Phone, "the invalid phone number is dropped")
			w := warnings[0]
			require.Equal(t, 2, w.Line)
			require.Equal(t, "Mobil", w.Column)
			require.Equal(t, "12345", w.Value)
			require.Equal(t, mapping.CodeInvalidPhone, w.Code)
			require.Contains(t, w.Reason, "the phone number has 5 digits")
			require.Equal(t, `["ada@example.com","Ada","12345"]`, w.Row)
		})
	}
}

// TestRejectedRowKeepsNoWarning: a row whose value was dropped and which a later stage then
// rejects (a duplicate e-mail under duplicates = "reject") was not sent, so it is a reject
// only: warnings are for rows sent without a value.
func TestRejectedRowKeepsNoWarning(t *testing.T) {
	t.Parallel()
	const csvText = "E-post,Mobil\nada@example.com,12\nada@example.com,12\n"
	ctx := context.Background()
	sender := &subscriberSender{}
	cfg, store, run := testPipeline(t, csvText, sender)
	spec, err := mapping.ParseSpec([]byte(`on_invalid = "drop"
duplicates = "reject"
columns = { "E-post" = "email", Mobil = "phone" }`))
	require.NoError(t, err)
	withMapping(t, &cfg, spec, mapping.Fields{})
	require.NoError(t, newEngine(t, cfg).Run(ctx, 0))

	var rejects, warnings []state.Reject
	require.NoError(t, store.Rejects(ctx, run.ID, func(r state.Reject) error { rejects = append(rejects, r); return nil }))
	require.NoError(t, store.Warnings(ctx, run.ID, func(r state.Reject) error { warnings = append(warnings, r); return nil }))
	require.Len(t, rejects, 1)
	require.Equal(t, 3, rejects[0].Line)
	require.Len(t, warnings, 1, "the sent row's warning only")
	require.Equal(t, 2, warnings[0].Line)
}
