package jobs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestVerify: after the service's list is emptied behind subsync's back (all but ten people
// deleted, five of those ten changed), `sync --verify` sends exactly the rows the service lacks
// or holds with other values and says so in the run; the next sync sends nothing. When the list
// is emptied again, a plain sync warns and verifies instead of reporting every row unchanged.
func TestVerify(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		const n = 2500 // three pages of by_list
		b := setup(t, backend)
		path := contacts(t, t.TempDir(), n, nil)
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path}}}
		rt := b.open(t)
		c, err := sink.New(b.cfg.Sink)
		require.NoError(t, err)
		sync := func(verify bool) state.Run {
			t.Helper()
			var id int64
			var err error
			if verify {
				id, err = rt.EnqueueVerify(ctx, "crm")
			} else {
				id, err = rt.EnqueueSync(ctx, "crm", false)
			}
			run := waitRun(t, rt, id, err)
			require.Equal(t, state.RunCompleted, run.State, run.Error)
			return run
		}
		// empty deletes everyone in the service but person1 … person<keep>.
		empty := func(keep int) {
			t.Helper()
			for _, s := range b.emu.ListSubscribers(b.listID) {
				var i int
				if _, err := fmt.Sscanf(s.Email, "person%d@", &i); err == nil && i <= keep {
					continue
				}
				require.NoError(t, c.DeleteSubscriber(ctx, s.ID))
			}
		}

		require.Equal(t, int64(n), sync(false).Counts.Sent)
		require.Zero(t, sync(false).Counts.Sent)

		empty(10)
		for i := 1; i <= 5; i++ {
			_, err := c.UpsertSubscriber(ctx, b.listID, sink.Subscriber{Email: fmt.Sprintf("person%d@example.com", i), Firstname: "Changed"}, "")
			require.NoError(t, err)
		}
		run := sync(true)
		require.Equal(t, [3]int64{n, n - 5, 5}, [3]int64{run.Counts.Read, run.Counts.Sent, run.Counts.Unchanged})
		require.Contains(t, run.Error, "verified against the 10 subscribers of the service's list: 2490 rows it lacked and 5 it held with other values were sent")
		subs := b.emu.ListSubscribers(b.listID)
		require.Len(t, subs, n)
		for _, s := range subs {
			require.NotEqual(t, "Changed", s.Fields["firstname"], s.Email)
		}
		require.Zero(t, sync(false).Counts.Sent, "the fingerprints say what the service holds again")

		// Emptied again: the plain sync sees the list far smaller than its fingerprints, warns
		// and verifies.
		empty(0)
		run = sync(false)
		require.Equal(t, int64(n), run.Counts.Sent)
		require.Contains(t, run.Error, fmt.Sprintf("the list holds 0 active subscribers where subsync sent %d", n))
		require.Contains(t, run.Error, "2500 rows it lacked")
		require.Contains(t, b.logs.String(), "far smaller")
		require.Len(t, b.emu.ListSubscribers(b.listID), n)
	})
}

// TestVerifyEvery: a sync's verify_every schedule queues verifying runs of it on its own: one
// repairs the list emptied behind subsync's back.
func TestVerifyEvery(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		path := contacts(t, t.TempDir(), 30, nil)
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "crm", ListID: b.listID, Source: sources.Config{Path: path}, VerifyEvery: "@every 1s"}}
		rt := b.open(t)
		running(t, rt)
		verified := func() []state.Run {
			runs, err := rt.State().Runs(ctx, state.RunFilter{Kind: state.KindSync, Name: "crm", States: []state.RunState{state.RunCompleted}})
			require.NoError(t, err)
			var out []state.Run
			for _, r := range runs {
				if r.Counts.Sent == 30 && strings.Contains(r.Error, "verified against the 0 subscribers of the service's list: 30 rows it lacked") {
					out = append(out, r)
				}
			}
			return out
		}
		waitFor(t, time.Minute, "a scheduled verifying run", func() bool { return len(verified()) > 0 })
		require.Len(t, b.emu.ListSubscribers(b.listID), 30)
	})
}

// TestVerifyComparesWhatTheServiceShows: right after a sync of rows with every kind of value
// (a phone number normalised by the mapping, a birthday, a gender, a consent, custom fields of
// several datatypes, tags), the service holds each row as sent: a verifying run sends nothing.
func TestVerifyComparesWhatTheServiceShows(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		var csv strings.Builder
		csv.WriteString("E-post;Fornavn;Mobil;Født;Kjønn;Nyhetsbrev;Kilde;Antall;Interesser;Grupper\n")
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(&csv, "Person%d@Example.com;Åse %d;912 34 %03d;17.05.19%02d;%s;%s;CRM %d;%d;%s;a|b\n", i, i, i, 50+i,
				[]string{"K", "m", ""}[i%3], []string{"ja", "x", ""}[i%3], i, i*10, []string{"Ski|Fotball", "Ski", ""}[i%3])
		}
		path := filepath.Join(t.TempDir(), "rich.csv")
		require.NoError(t, os.WriteFile(path, []byte(csv.String()), 0o600))
		spec := &mapping.Spec{CreateMissing: true, DefaultCountry: "+47", Columns: map[string]mapping.Column{
			"E-post": {To: sink.FieldEmail}, "Fornavn": {To: sink.FieldFirstname}, "Mobil": {To: sink.FieldPhone},
			"Født": {To: sink.FieldBirthday}, "Kjønn": {To: sink.FieldGender}, "Nyhetsbrev": {To: sink.ConsentEmail},
			"Kilde":      {To: mapping.TargetCustom, Custom: "Kilde"},
			"Antall":     {To: mapping.TargetCustom, Custom: "Antall", Datatype: sink.DatatypeNumber},
			"Interesser": {To: mapping.TargetCustom, Custom: "Interesser", Datatype: sink.DatatypeMultipleChoice, Choices: []string{"Ski", "Fotball"}, Separator: "|"},
			"Grupper":    {To: mapping.TargetTags, Separator: "|"},
		}}
		b.cfg.Syncs = []jobs.SyncSpec{{Name: "rich", ListID: b.listID, Source: sources.Config{Path: path}, Mapping: spec}}
		rt := b.open(t)
		id, err := rt.EnqueueSync(ctx, "rich", false)
		run := waitRun(t, rt, id, err)
		require.Equal(t, int64(40), run.Counts.Sent, run.Error)
		id, err = rt.EnqueueVerify(ctx, "rich")
		run = waitRun(t, rt, id, err)
		require.Equal(t, state.Counts{Read: 40, Unchanged: 40}, state.Counts{Read: run.Counts.Read, Sent: run.Counts.Sent, Unchanged: run.Counts.Unchanged}, run.Error)
	})
}
