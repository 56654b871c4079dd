package jobs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/state"
)

// TestSourceNeverActivates: a status column saying "active" (and a consent column saying
// "ja") asks for no status: before any status pull has run, against a service where
// status=active revives, 10 people who unsubscribed stay unsubscribed (read from the list
// before the first push, they are not sent), and no request carries status=active. The 190
// new people become active by being sent without a status.
func TestSourceNeverActivates(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend, sinktest.WithActiveRevives(true))
		c, err := sink.New(b.cfg.Sink)
		require.NoError(t, err)
		var gone []sink.Subscriber
		for i := 1; i <= 10; i++ {
			gone = append(gone, sink.Subscriber{Email: fmt.Sprintf("person%d@example.com", i)})
		}
		_, err = c.BulkInsert(ctx, sink.BulkOptions{ListID: b.listID, Status: sink.StatusUnsubscribed}, gone)
		require.NoError(t, err)
		b.emu.ResetRequests()

		var sb strings.Builder
		sb.WriteString("E-post,Status,Nyhetsbrev\n")
		for i := 1; i <= 200; i++ {
			fmt.Fprintf(&sb, "person%d@example.com,%s,%s\n", i, []string{"active", "aktiv", "Active"}[i%3], []string{"ja", "1", "yes"}[i%3])
		}
		path := filepath.Join(t.TempDir(), "contacts.csv")
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o600))
		spec := &mapping.Spec{Columns: map[string]mapping.Column{"E-post": {To: "email"},
			"Status": {To: mapping.TargetStatus}, "Nyhetsbrev": {To: "SAMTYKKEEPOST"}}}

		rt := b.open(t)
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID, Mapping: spec})
		run := waitRun(t, rt, id, err)
		require.Equal(t, state.RunCompleted, run.State)
		require.Equal(t, int64(190), run.Counts.Sent)
		require.Equal(t, int64(10), run.Counts.Suppressed, "read from the list before the first push")

		for _, r := range b.emu.Requests() {
			if r.Method == "GET" {
				continue // the reads of the list's unsubscribed and bounced people
			}
			require.Empty(t, r.Query["status"], "%s %s?%s", r.Method, r.Path, r.Query.Encode())
			require.Empty(t, r.Query["status_mobile"], "%s %s?%s", r.Method, r.Path, r.Query.Encode())
		}
		for i := 1; i <= 200; i++ {
			email := fmt.Sprintf("person%d@example.com", i)
			s, ok := b.emu.SubscriberByEmail(email)
			require.True(t, ok, email)
			want := "active"
			if i <= 10 {
				want = "unsubscribed"
			}
			require.Equal(t, want, s.Lists[b.listID].Status, email)
		}
	})
}
