package jobs_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestDeltaAndDryRun100k: a second sync of an unchanged 100,000-row source sends nothing;
// after 1,000 rows change it sends exactly those; a dry run predicts exactly what the real
// run then sends (rows, statuses, suppressed and rejected rows), and a changed mapping
// invalidates the fingerprints.
func TestDeltaAndDryRun100k(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		const n = 100_000
		b := setup(t, backend)
		path := contacts(t, t.TempDir(), n, func(i int) bool { return i%10_000 == 5 }) // 10 invalid
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "big", ListID: b.listID, Source: sources.Config{Path: path}}}
		rt := b.open(t)
		syncNow := func(name string) state.Run {
			t.Helper()
			id, err := rt.EnqueueSync(ctx, name, false)
			return waitRun(t, rt, id, err)
		}

		first := syncNow("big")
		require.Equal(t, int64(n-10), first.Counts.Sent)
		require.Equal(t, int64(10), first.Counts.Rejected)

		b.emu.ResetRequests()
		second := syncNow("big")
		require.Equal(t, state.Counts{Read: n, Unchanged: n - 10, Rejected: 10}, second.Counts)
		rows, requests := bulkRows(b.emu)
		require.Zero(t, rows+requests, "an unchanged source sends nothing")

		// 1,000 rows change their first name; two people leave meanwhile.
		changed := map[string]bool{}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var out bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(data))
		line := 0
		for sc.Scan() {
			text := sc.Text()
			if line > 0 && line%100 == 7 {
				email, rest, _ := strings.Cut(text, ",")
				text = email + ",Kari" + strings.TrimPrefix(rest, "Ola")
				changed[email] = true
			}
			out.WriteString(text + "\n")
			line++
		}
		require.NoError(t, sc.Err())
		require.Len(t, changed, 1000)
		require.NoError(t, os.WriteFile(path, out.Bytes(), 0o600))
		_, err = rt.State().RecordStatusChanges(ctx, []state.StatusChange{
			{Email: "person51@example.com", Status: sink.StatusUnsubscribed, ListID: b.listID, ChangedAt: first.FinishedAt},
			{Email: "person50@example.com", Status: sink.StatusBounce, ListID: b.listID, ChangedAt: first.FinishedAt},
		}, nil)
		require.NoError(t, err)

		// The dry run, as a CSV plan.
		var csvOut bytes.Buffer
		pw := jobs.NewPlanCSV(&csvOut)
		plan, err := rt.PlanSync(ctx, "big", false, pw.Write)
		require.NoError(t, err)
		require.NoError(t, pw.Flush())
		require.Equal(t, state.Counts{Read: n, Sent: 1000, Unchanged: n - 10 - 1002, Suppressed: 2, Rejected: 10}, plan.Counts)
		require.Equal(t, map[string]int64{"": 1000}, plan.ByStatus)
		require.Equal(t, map[string]int64{mapping.CodeInvalidEmail: 10}, plan.RejectsByCode)
		recs, err := csv.NewReader(&csvOut).ReadAll()
		require.NoError(t, err)
		require.Len(t, recs, n+1, "a header and one line per source row")
		require.Equal(t, jobs.PlanCSVHeader, recs[0])
		planned := map[string]bool{}
		actions := map[string]int{}
		for _, r := range recs[1:] {
			actions[r[3]]++
			switch r[3] {
			case jobs.PlanSend:
				planned[r[2]] = true
			case jobs.PlanSuppressed:
				require.Contains(t, []string{"person51@example.com,unsubscribed", "person50@example.com,bounce"}, r[2]+","+r[4])
			case jobs.PlanRejected:
				require.Equal(t, mapping.CodeInvalidEmail, r[6])
				require.NotEmpty(t, r[9])
			}
		}
		require.Equal(t, map[string]int{jobs.PlanSend: 1000, jobs.PlanUnchanged: n - 10 - 1002, jobs.PlanSuppressed: 2,
			jobs.PlanRejected: 10}, actions)
		require.Equal(t, changed, planned, "the plan sends exactly the changed rows")
		require.Equal(t, "108", recs[107][0], "line numbers are the file's")
		rows, requests = bulkRows(b.emu)
		require.Zero(t, rows+requests, "a dry run sends nothing")

		// The real run sends what the plan said.
		third := syncNow("big")
		require.Equal(t, plan.Counts.Sent, third.Counts.Sent)
		require.Equal(t, plan.Counts.Unchanged, third.Counts.Unchanged)
		require.Equal(t, plan.Counts.Suppressed, third.Counts.Suppressed)
		require.Equal(t, plan.Counts.Rejected, third.Counts.Rejected)
		rows, _ = bulkRows(b.emu)
		require.Equal(t, 1000, rows, "exactly the 1,000 changed rows")
		for email := range changed {
			s, ok := b.emu.SubscriberByEmail(email)
			require.True(t, ok)
			require.True(t, strings.HasPrefix(s.Fields["firstname"], "Kari"), "%s was sent", email)
		}

		// After the run, a dry run plans nothing to send.
		plan, err = rt.PlanSync(ctx, "big", false, nil)
		require.NoError(t, err)
		require.Zero(t, plan.Counts.Sent)

		// A changed mapping (a constant company) invalidates every fingerprint.
		spec := mapping.Spec{Constants: map[string]string{"company": "Acme AS"}}
		b2 := b.cfg
		b2.Syncs = []jobs.SyncSpec{{Name: "big", ListID: b.listID, Source: sources.Config{Path: path}, Mapping: &spec}}
		rt2 := b.openWith(t, b2)
		plan, err = rt2.PlanSync(ctx, "big", false, nil)
		require.NoError(t, err)
		require.Equal(t, int64(n-12), plan.Counts.Sent)
		require.Zero(t, plan.Counts.Unchanged)
	})
}

// TestDryRunStatusesAndDuplicates: rows whose source says unsubscribed or bounce are planned
// and sent with that status, grouped; under update-keep-status a suppressed row is planned
// as sent with its suppressed status; duplicates follow the mapping's policy.
func TestDryRunStatusesAndDuplicates(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		path := t.TempDir() + "/contacts.csv"
		require.NoError(t, os.WriteFile(path, []byte(`E-post,Fornavn,Status,Nyhetsbrev
a@example.com,A,active,ja
b@example.com,B,unsubscribed,ja
c@example.com,C,bounce,ja
d@example.com,D,active,nei
e@example.com,E,active,ja
a@example.com,A2,active,ja
`), 0o600))
		spec := &mapping.Spec{Columns: map[string]mapping.Column{"E-post": {To: "email"}, "Fornavn": {To: "firstname"},
			"Status": {To: mapping.TargetStatus}, "Nyhetsbrev": {To: "SAMTYKKEEPOST"}}, Duplicates: mapping.DuplicatesFirst}
		rt := b.open(t)
		_, err := rt.State().RecordStatusChanges(ctx, []state.StatusChange{
			{Email: "e@example.com", Status: sink.StatusBounce, ListID: b.listID, ChangedAt: time.Now()},
		}, nil)
		require.NoError(t, err)

		var rowsOf []jobs.PlanRow
		plan, err := rt.PlanImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID, Mapping: spec,
			Suppression: pipeline.SuppressionUpdateKeepStatus}, func(r jobs.PlanRow) error {
			rowsOf = append(rowsOf, r)
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, state.Counts{Read: 6, Sent: 5, Duplicates: 1, Suppressed: 1}, plan.Counts)
		require.Equal(t, map[string]int64{"": 1, "unsubscribed": 2, "bounce": 2}, plan.ByStatus)
		got := make([]string, len(rowsOf))
		for i, r := range rowsOf {
			got[i] = fmt.Sprintf("%d %s %s %s", r.Line, r.Email, r.Action, r.Status)
		}
		require.Equal(t, []string{
			"2 a@example.com send ", // active asks for no status
			"3 b@example.com send unsubscribed",
			"4 c@example.com send bounce",
			"5 d@example.com send unsubscribed", // a consent "nei" unsubscribes
			"6 e@example.com send bounce",       // suppressed: sent keeping its status
			"7 a@example.com duplicate ",
		}, got)
		require.Contains(t, rowsOf[4].Reason, "suppressed")

		// The real import sends the same, one request per status.
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: path, ListID: b.listID, Mapping: spec,
			Suppression: pipeline.SuppressionUpdateKeepStatus})
		run := waitRun(t, rt, id, err)
		require.Equal(t, plan.Counts.Sent, run.Counts.Sent)
		require.Equal(t, plan.Counts.Suppressed, run.Counts.Suppressed)
		byStatus := map[string]int{}
		for _, r := range b.emu.Requests() {
			if strings.HasSuffix(r.Path, "/subscribers/bulkinsert") && r.Status == 200 {
				byStatus[r.Query.Get("status")] += r.Rows
			}
		}
		require.Equal(t, map[string]int{"": 1, "unsubscribed": 2, "bounce": 2}, byStatus)
		for email, want := range map[string]string{"a@example.com": "active", "b@example.com": "unsubscribed",
			"c@example.com": "bounce", "d@example.com": "unsubscribed", "e@example.com": "bounce"} {
			s, ok := b.emu.SubscriberByEmail(email)
			require.True(t, ok)
			require.Equal(t, want, s.Lists[b.listID].Status, email)
		}
		require.False(t, slices.ContainsFunc(rowsOf, func(r jobs.PlanRow) bool { return r.Action == jobs.PlanRejected }))
	})
}

// TestDeltaSourceValues: a row is unchanged when its payload is, whatever else changed in the
// source (an ignored column, white space the mapping trims); duplicates count the same
// whether a row is found unchanged from its source values or from its payload.
func TestDeltaSourceValues(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		b, write, syncNow := crmSync(t, backend, &mapping.Spec{Columns: map[string]mapping.Column{"E-post": {To: "email"},
			"Fornavn": {To: "firstname"}, "Sist innlogget": {To: mapping.TargetIgnore}}})
		write("E-post,Fornavn,Sist innlogget\na@example.com,Ada,1\nb@example.com,Bob,1\na@example.com,Ada,1\nc@example.com,Cy,1\n")
		require.Equal(t, state.Counts{Read: 4, Sent: 4, Duplicates: 1, Batches: 2, Requests: 2}, syncNow().Counts)
		// The later row for a@ is sent every time, so that it wins over the earlier one.
		unchanged := state.Counts{Read: 4, Unchanged: 3, Duplicates: 1, Sent: 1, Batches: 1, Requests: 1}
		require.Equal(t, unchanged, syncNow().Counts)

		// Everybody logged in again (an ignored column), and Bob's name gained white space.
		write("E-post,Fornavn,Sist innlogget\na@example.com,Ada,2\nb@example.com,  Bob ,2\na@example.com,Ada,2\nc@example.com,Cy,2\n")
		require.Equal(t, unchanged, syncNow().Counts)
		require.Equal(t, unchanged, syncNow().Counts)

		// A real change is sent; the later row for an e-mail wins over an earlier one.
		write("E-post,Fornavn,Sist innlogget\na@example.com,Ada Lovelace,2\nb@example.com,Bobby,2\na@example.com,Ada,2\nc@example.com,Cy,2\n")
		got := syncNow().Counts
		require.Equal(t, int64(3), got.Sent, "%+v", got)
		require.Equal(t, int64(1), got.Unchanged)
		a, _ := b.emu.SubscriberByEmail("a@example.com")
		require.Equal(t, "Ada", a.Fields["firstname"], "the later row wins")
		write("E-post,Fornavn,Sist innlogget\na@example.com,Ada,2\nb@example.com,Bobby,2\na@example.com,Ada Lovelace,2\nc@example.com,Cy,2\n")
		got = syncNow().Counts
		require.Equal(t, unchanged, got, "the earlier row is what was stored: only the later one goes")
		a, _ = b.emu.SubscriberByEmail("a@example.com")
		require.Equal(t, "Ada Lovelace", a.Fields["firstname"])
		bob, _ := b.emu.SubscriberByEmail("b@example.com")
		require.Equal(t, "Bobby", bob.Fields["firstname"])
	})
}

// TestDeltaDuplicatesKnownAndNew: in a delta sync, a duplicate is found whether its address
// has a fingerprint (it was sent before) or not, and however its case differs: under
// duplicates = first the earlier row stays, unchanged or new.
func TestDeltaDuplicatesKnownAndNew(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		b, write, syncNow := crmSync(t, backend, &mapping.Spec{Columns: map[string]mapping.Column{"E-post": {To: "email"},
			"Fornavn": {To: "firstname"}}, Duplicates: mapping.DuplicatesFirst})
		write("E-post,Fornavn\na@example.com,Ada\nb@example.com,Bob\n")
		require.Equal(t, state.Counts{Read: 2, Sent: 2, Batches: 1, Requests: 1}, syncNow().Counts)

		write("E-post,Fornavn\na@example.com,Ada\nnew@example.com,Nina\n A@Example.COM ,Changed\nNEW@example.com,Other\n" +
			"b@example.com,Bob\nc@example.com,Cy\nb@example.com,Bobby\n")
		got := syncNow().Counts
		require.Equal(t, state.Counts{Read: 7, Unchanged: 2, Sent: 2, Duplicates: 3, Batches: 1, Requests: 1}, got)
		for email, name := range map[string]string{"a@example.com": "Ada", "new@example.com": "Nina", "b@example.com": "Bob", "c@example.com": "Cy"} {
			s, ok := b.emu.SubscriberByEmail(email)
			require.True(t, ok, email)
			require.Equal(t, name, s.Fields["firstname"], "the first row for %s stays", email)
		}
	})
}

// crmSync configures a sync "crm" of a CSV file with the mapping on a fresh bundle of the
// backend: write replaces the file, syncNow runs the sync and returns its run.
func crmSync(t *testing.T, backend string, spec *mapping.Spec) (b *bundle, write func(string), syncNow func() state.Run) {
	t.Helper()
	b = setup(t, backend)
	path := t.TempDir() + "/crm.csv"
	write = func(body string) { require.NoError(t, os.WriteFile(path, []byte(body), 0o600)) }
	b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path}, Mapping: spec}}
	rt := b.open(t)
	syncNow = func() state.Run {
		t.Helper()
		id, err := rt.EnqueueSync(context.Background(), "crm", false)
		return waitRun(t, rt, id, err)
	}
	return b, write, syncNow
}
