package sink_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
)

// listRequests returns the bulkinsert and create requests the emulator answered, as the
// list parameter each named the list with and the status answered.
func listRequests(srv *sinktest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Method != http.MethodPost || (r.Path != sinktest.V2Prefix+"/subscribers/bulkinsert" && r.Path != sinktest.V2Prefix+"/subscribers") {
			continue
		}
		for _, p := range []string{sink.ListParamScalar, sink.ListParamArray} {
			if r.Query.Has(p) {
				out = append(out, fmt.Sprintf("%s %d", p, r.Status))
			}
		}
	}
	return out
}

// TestListIDFormDetected: against a service that names lists only as subscriber_list_id[],
// a client left to detect the form delivers every row after one refused request, remembers
// the form (OnListIDForm, ListIDForm) and sends it from then on; single creates too.
func TestListIDFormDetected(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var learnt []bool
	b := setup(t, func(c *sink.Config) {
		c.ListIDDetect = true
		c.OnListIDForm = func(array bool) { mu.Lock(); learnt = append(learnt, array); mu.Unlock() }
	}, sinktest.WithListIDArrayOnly(true))
	ctx := t.Context()
	list := b.srv.CreateList("Members")
	param, known := b.client.ListIDForm()
	require.Equal(t, sink.ListParamScalar, param)
	require.False(t, known)

	rows := make([]sink.Subscriber, 2500)
	for i := range rows {
		rows[i] = sink.Subscriber{Email: fmt.Sprintf("p%d@example.com", i)}
	}
	res, err := b.client.BulkInsert(ctx, sink.BulkOptions{ListID: list}, rows)
	require.NoError(t, err)
	require.Equal(t, 2500, res.Sent)
	require.Empty(t, res.Rejects)
	require.Len(t, b.srv.ListSubscribers(list), 2500)
	require.Equal(t, []string{"subscriber_list_id 422", "subscriber_list_id[] 200", "subscriber_list_id[] 200", "subscriber_list_id[] 200"}, listRequests(b.srv))
	param, known = b.client.ListIDForm()
	require.Equal(t, sink.ListParamArray, param)
	require.True(t, known)
	require.Equal(t, []bool{true}, learnt)

	b.srv.ResetRequests()
	_, err = b.client.UpsertSubscriber(ctx, list, sink.Subscriber{Email: "new@example.com"}, "")
	require.NoError(t, err)
	require.Equal(t, []string{"subscriber_list_id[] 200"}, listRequests(b.srv))
}

// TestListIDFormConcurrentFirstBatches: batches sent at once while the form is unknown go one
// at a time until it is known: one request is refused, not one per batch.
func TestListIDFormConcurrentFirstBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *sink.Config) { c.ListIDDetect = true; c.MaxInFlight = 4 }, sinktest.WithListIDArrayOnly(true))
	list := b.srv.CreateList("Members")
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() {
			rows := make([]sink.Subscriber, 100)
			for i := range rows {
				rows[i] = sink.Subscriber{Email: fmt.Sprintf("p%d-%d@example.com", k, i)}
			}
			res, err := b.client.InsertBatch(t.Context(), sink.BulkOptions{ListID: list}, rows)
			require.NoError(t, err)
			require.Equal(t, 100, res.Sent)
		})
	}
	wg.Wait()
	reqs := listRequests(b.srv)
	require.Equal(t, []string{"subscriber_list_id 422"}, reqs[:1])
	require.Equal(t, []string{"subscriber_list_id[] 200", "subscriber_list_id[] 200", "subscriber_list_id[] 200", "subscriber_list_id[] 200"}, reqs[1:])
}

// TestListIDFormRefusedRowIsNotTheForm: against a service that takes both forms, a first
// batch refused for a bad row is tried once in the other form (refused too), then split as
// always: the bad row is rejected, the others delivered, and the spec's form is the one
// learnt, since the service accepted it.
func TestListIDFormRefusedRowIsNotTheForm(t *testing.T) {
	t.Parallel()
	var learnt []bool
	b := setup(t, func(c *sink.Config) {
		c.ListIDDetect = true
		c.OnListIDForm = func(array bool) { learnt = append(learnt, array) }
	})
	list := b.srv.CreateList("Members")
	rows := []sink.Subscriber{{Email: "ok@example.com"}, {Email: "x@example.com", Birthday: "2023-02-30"}}
	res, err := b.client.InsertBatch(t.Context(), sink.BulkOptions{ListID: list}, rows)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent)
	require.Len(t, res.Rejects, 1)
	reqs := listRequests(b.srv)
	require.Equal(t, []string{"subscriber_list_id 422", "subscriber_list_id[] 422", "subscriber_list_id 200"}, reqs[:3])
	require.Equal(t, []bool{false}, learnt)
	param, known := b.client.ListIDForm()
	require.Equal(t, sink.ListParamScalar, param)
	require.True(t, known)
}

// TestListIDFormConfigured: a configured form is sent, never another (no detection), and
// SetListIDForm does not override it.
func TestListIDFormConfigured(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, sinktest.WithListIDArrayOnly(true))
	list := b.srv.CreateList("Members")
	b.client.SetListIDForm(true)
	res, err := b.client.InsertBatch(t.Context(), sink.BulkOptions{ListID: list}, []sink.Subscriber{{Email: "a@example.com"}})
	require.NoError(t, err)
	require.Zero(t, res.Sent)
	require.Len(t, res.Rejects, 1, "refused alone: a reject")
	for _, r := range listRequests(b.srv) {
		require.Equal(t, "subscriber_list_id 422", r)
	}
}
