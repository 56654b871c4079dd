package jobs_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// TestWriteBackUnmatched: a write-back UPDATE that matches no row (the CRM stores the address
// in capitals with a trailing space; another person is not in it at all) leaves the change
// unmatched, not done: the run counts it and says so in its note and in a warning, `status`
// and the metrics count it, and the next pulls try it again, a bounded number of times.
func TestWriteBackUnmatched(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		crm := newCRM(t, 3)
		_, err := crm.pool.Exec(ctx, `UPDATE contacts SET email = '  CONTACT2@Example.com ' WHERE email = 'contact2@example.com';
DELETE FROM contacts WHERE email = 'contact3@example.com'`)
		require.NoError(t, err)
		b.subscribe(t, contactEmail(1), contactEmail(2), contactEmail(3))
		for i := 1; i <= 3; i++ {
			require.NoError(t, b.emu.SetStatus(contactEmail(i), b.listID, sink.StatusUnsubscribed))
		}
		b.cfg.StatusPull.WriteBack = crm.writeBack() // WHERE email = :email
		b.cfg.StatusPull.WriteBack.UnmatchedRetries = 2
		rt := b.open(t)
		metrics := httptest.NewServer(rt.Handler())
		defer metrics.Close()
		pull := func() state.Run {
			t.Helper()
			id, err := rt.EnqueueStatusPull(ctx)
			return waitRun(t, rt, id, err)
		}

		first := pull()
		require.Equal(t, state.RunCompleted, first.State)
		require.Equal(t, state.Counts{Read: 3, Sent: 1, Unmatched: 2, Requests: 1}, first.Counts,
			"one change written back, two matched no row")
		require.Contains(t, first.Error, "2 changes matched nothing in the source")
		require.Contains(t, b.logs.String(), `msg="status changes matched nothing in the source"`)
		require.Equal(t, "3 changes read, 3 recorded, 1 written back, 2 matched nothing in the source",
			jobs.DescribeRun(first).Summary())
		o, err := rt.StatusOverview(ctx)
		require.NoError(t, err)
		require.Len(t, o.WriteBacks, 1)
		require.Equal(t, state.WriteBackSummary{Target: "sql", Done: 1, Unmatched: 2}, o.WriteBacks[0])
		require.Len(t, o.Unmatched, 2)
		require.Equal(t, contactEmail(2), o.Unmatched[0].Change.Email)
		require.Equal(t, 1, o.Unmatched[0].Unmatched)
		body := get(t, metrics.URL+"/metrics")
		require.Contains(t, body, `subsync_writeback_unmatched_total{target="sql"} 2`)
		require.Contains(t, body, `subsync_writebacks{state="unmatched",target="sql"} 2`)
		require.Contains(t, body, `subsync_writebacks{state="done",target="sql"} 1`)

		// The next pull tries the two again.
		second := pull()
		require.Equal(t, state.Counts{Read: 3, Duplicates: 3, Unmatched: 2, Requests: 1}, second.Counts)

		// The CRM's address is mended: the third pull writes it back; the person the CRM
		// lacks is tried a third (last) time.
		_, err = crm.pool.Exec(ctx, `UPDATE contacts SET email = lower(trim(email))`)
		require.NoError(t, err)
		third := pull()
		require.Equal(t, state.Counts{Read: 3, Duplicates: 3, Sent: 1, Unmatched: 1, Requests: 1}, third.Counts)
		got, _ := crm.statuses(t)
		require.Equal(t, map[string]int{sink.StatusUnsubscribed: 2}, got)

		// Tried 1 + 2 times: no more.
		fourth := pull()
		require.Equal(t, state.Counts{Read: 3, Duplicates: 3, Requests: 1}, fourth.Counts)
		require.Empty(t, fourth.Error)
		o, err = rt.StatusOverview(ctx)
		require.NoError(t, err)
		require.Equal(t, state.WriteBackSummary{Target: "sql", Done: 2, Unmatched: 1}, o.WriteBacks[0])
		require.Len(t, o.Unmatched, 1)
		require.Equal(t, contactEmail(3), o.Unmatched[0].Change.Email)
		require.Equal(t, 3, o.Unmatched[0].Unmatched)
	})
}

// TestWriteBackNormalisedStatement: the statement the documentation shows compares the
// address as the CRM may store it (lower(trim(email))), so the capitals and the trailing space
// match.
func TestWriteBackNormalisedStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, "sqlite")
	crm := newCRM(t, 1)
	_, err := crm.pool.Exec(ctx, `UPDATE contacts SET email = '  CONTACT1@Example.com '`)
	require.NoError(t, err)
	b.subscribe(t, contactEmail(1))
	require.NoError(t, b.emu.SetStatus(contactEmail(1), b.listID, sink.StatusBounce))
	b.cfg.StatusPull.WriteBack = crm.writeBack()
	b.cfg.StatusPull.WriteBack.Statement = `UPDATE contacts SET newsletter_status = :status, status_changed_at = :changed_at
WHERE lower(trim(email)) = :email AND (status_changed_at IS NULL OR status_changed_at <= :changed_at)`
	rt := b.open(t)
	id, err := rt.EnqueueStatusPull(ctx)
	run := waitRun(t, rt, id, err)
	require.Equal(t, state.Counts{Read: 1, Sent: 1, Requests: 1}, run.Counts)
	got, _ := crm.statuses(t)
	require.Equal(t, map[string]int{sink.StatusBounce: 1}, got)
}

// TestCSVWriteBackUpdatesContacts: a csv write-back with email_column updates the contacts
// file in place (its byte order mark, delimiter and line ends kept); a change whose address the
// file lacks is unmatched, counted as with SQL.
func TestCSVWriteBackUpdatesContacts(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		path := filepath.Join(t.TempDir(), "kontakter.csv")
		original := "\ufeffNavn;E-post;Nyhetsbrev\r\nAda;  ADA@Example.com ;active\r\nGrace;grace@example.com;active\r\n"
		require.NoError(t, os.WriteFile(path, []byte(original), 0o640))
		b.subscribe(t, "ada@example.com", "grace@example.com", "nobody@example.com")
		require.NoError(t, b.emu.SetStatus("ada@example.com", b.listID, sink.StatusUnsubscribed))
		require.NoError(t, b.emu.SetStatus("nobody@example.com", b.listID, sink.StatusBounce))
		b.cfg.StatusPull.WriteBack = jobs.WriteBackSpec{Kind: jobs.WriteBackCSV, Path: path, EmailColumn: "e-post",
			StatusColumn: "Nyhetsbrev", ChangedAtColumn: "Endret"}
		rt := b.open(t)

		id, err := rt.EnqueueStatusPull(ctx)
		run := waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 2, Sent: 1, Unmatched: 1, Requests: 1}, run.Counts)
		require.Contains(t, run.Error, "1 change matched nothing in the source")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		lines := strings.Split(string(data), "\r\n")
		require.Len(t, lines, 4, "%q", data)
		require.Equal(t, "\ufeffNavn;E-post;Nyhetsbrev;Endret", lines[0])
		require.Regexp(t, `^Ada;"  ADA@Example.com ";unsubscribed;20\d\d-\d\d-\d\dT[0-9:.]+Z$`, lines[1])
		require.Equal(t, "Grace;grace@example.com;active;", lines[2])
		require.Empty(t, lines[3])
		info, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "the file keeps its mode")

		o, err := rt.StatusOverview(ctx)
		require.NoError(t, err)
		require.Equal(t, state.WriteBackSummary{Target: "csv", Done: 1, Unmatched: 1}, o.WriteBacks[0])
		require.Equal(t, "nobody@example.com", o.Unmatched[0].Change.Email)
	})
}
