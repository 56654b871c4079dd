package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/state"
)

// listParams returns the bulkinsert requests the emulator answered, as the list parameter
// each named the list with and the status answered.
func listParams(emu *sinktest.Server) []string {
	var out []string
	for _, r := range emu.Requests() {
		if r.Method != http.MethodPost || r.Path != sinktest.V2Prefix+"/subscribers/bulkinsert" {
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

// TestImportDetectsTheListForm (#28 point 4): against a service that names lists only as
// subscriber_list_id[], an import with the form left to detection delivers every row after
// one refused request, logs the form, and remembers it for the account: a later worker on
// the same database sends that form from its first request.
func TestImportDetectsTheListForm(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend, sinktest.WithListIDArrayOnly(true))
		b.cfg.Sink.ListIDDetect = true
		rt := b.open(t)
		f, err := rt.ListIDForm(ctx)
		require.NoError(t, err)
		require.Equal(t, jobs.ListIDForm{Param: sink.ListParamScalar}, f, "not known before the first push")

		file := contacts(t, t.TempDir(), 2500, nil)
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: file, ListID: b.listID})
		run := waitRun(t, rt, id, err)
		require.Equal(t, state.RunCompleted, run.State, run.Error)
		require.Equal(t, int64(2500), run.Counts.Sent)
		require.Zero(t, run.Counts.Rejected)
		require.Len(t, b.emu.ListSubscribers(b.listID), 2500)
		reqs := listParams(b.emu)
		require.Equal(t, "subscriber_list_id 422", reqs[0], "one refused request")
		for _, r := range reqs[1:] {
			require.Equal(t, "subscriber_list_id[] 200", r)
		}
		require.Len(t, reqs, 4)
		require.Contains(t, b.logs.String(), `msg="the service takes the list parameter in this form" list_param=subscriber_list_id[]`)
		require.Regexp(t, `msg="list parameter" .*run_id=1 list_param=subscriber_list_id form="detected`, b.logs.String())
		f, err = rt.ListIDForm(ctx)
		require.NoError(t, err)
		require.Equal(t, sink.ListParamArray, f.Param)
		require.Equal(t, "learnt", f.How)

		// Another worker (a fresh client) on the same database: no refused request.
		b.emu.ResetRequests()
		other := b.open(t)
		id, err = other.EnqueueImport(ctx, jobs.ImportArgs{Path: contacts(t, t.TempDir(), 30, nil), ListID: b.listID})
		again := waitRun(t, other, id, err)
		require.Equal(t, state.RunCompleted, again.State, again.Error)
		require.Equal(t, []string{"subscriber_list_id[] 200"}, listParams(b.emu))
		require.Regexp(t, `msg="list parameter" .*run_id=2 list_param=subscriber_list_id\[\] form=known`, b.logs.String())
	})
}
