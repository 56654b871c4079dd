package jobs_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestSyncDeltaAndSuppression: a sync sends only changed rows; unsubscribes and bounces
// pulled from the service are never pushed again, even with --full.
func TestSyncDeltaAndSuppression(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		path := contacts(t, t.TempDir(), 100, nil)
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path}}}
		rt := b.open(t)

		syncNow := func(full bool) state.Run {
			t.Helper()
			id, err := rt.EnqueueSync(ctx, "crm", full)
			require.NoError(t, err)
			run, err := rt.Wait(ctx, id, nil)
			require.NoError(t, err)
			return run
		}
		first := syncNow(false)
		require.Equal(t, state.Counts{Read: 100, Sent: 100, Batches: 1, Requests: 1}, first.Counts)

		second := syncNow(false)
		require.Equal(t, state.Counts{Read: 100, Unchanged: 100}, second.Counts, "nothing changed, nothing sent")

		// Ten people changed their first name in the CRM.
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		changed := string(data)
		for i := 1; i <= 10; i++ {
			changed = strings.Replace(changed, fmt.Sprintf("person%d@example.com,Ola%d,", i, i),
				fmt.Sprintf("person%d@example.com,Kari%d,", i, i), 1)
		}
		require.NoError(t, os.WriteFile(path, []byte(changed), 0o600))
		third := syncNow(false)
		require.Equal(t, state.Counts{Read: 100, Unchanged: 90, Sent: 10, Batches: 1, Requests: 1}, third.Counts)
		got, _ := b.emu.SubscriberByEmail("person3@example.com")
		require.Equal(t, "Kari3", got.Fields["firstname"])

		// Two people leave; the status pull brings it back, twice changes nothing.
		require.NoError(t, b.emu.SetStatus("person20@example.com", b.listID, "unsubscribed"))
		require.NoError(t, b.emu.SetStatus("person21@example.com", b.listID, "bounce"))
		pullID, err := rt.EnqueueStatusPull(ctx)
		require.NoError(t, err)
		pull, err := rt.Wait(ctx, pullID, nil)
		require.NoError(t, err)
		require.Equal(t, int64(2), pull.Counts.Read)
		require.Zero(t, pull.Counts.Duplicates)
		sup, err := rt.State().Suppressed(ctx, b.listID, []string{"person20@example.com", "person21@example.com", "person22@example.com"})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"person20@example.com": "unsubscribed", "person21@example.com": "bounce"}, sup)
		pullID, err = rt.EnqueueStatusPull(ctx)
		require.NoError(t, err)
		again, err := rt.Wait(ctx, pullID, nil)
		require.NoError(t, err)
		require.Equal(t, again.Counts.Read, again.Counts.Duplicates, "a second pull records nothing new")

		// --full sends everything again, except to the people who left.
		full := syncNow(true)
		require.Equal(t, state.Counts{Read: 100, Suppressed: 2, Sent: 98, Batches: 1, Requests: 1}, full.Counts)
		for _, email := range []string{"person20@example.com", "person21@example.com"} {
			s, ok := b.emu.SubscriberByEmail(email)
			require.True(t, ok)
			require.NotEqual(t, "active", s.Lists[b.listID].Status, "%s stays out", email)
		}

		// One queued run per sync name: a second request names the queued job.
		id1, err := rt.EnqueueSync(ctx, "crm", false)
		require.NoError(t, err)
		id2, err := rt.EnqueueSync(ctx, "crm", true)
		require.ErrorIs(t, err, jobs.ErrAlreadyQueued)
		require.Equal(t, id1, id2)
		queued, err := rt.Jobs(ctx)
		require.NoError(t, err)
		require.Len(t, queued, 1)
		require.Equal(t, "crm", queued[0].Name)
		require.NoError(t, rt.CancelJob(ctx, id1))
		cancelled, err := rt.Wait(ctx, id1, nil)
		require.ErrorIs(t, err, jobs.ErrRunCancelled)
		require.Equal(t, state.RunCancelled, cancelled.State)

		_, err = rt.EnqueueSync(ctx, "nope", false)
		require.ErrorContains(t, err, `"nope"`)
	})
}
