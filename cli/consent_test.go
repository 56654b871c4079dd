package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
)

// TestRunsCountsLearntSuppressions: against a service that revives people on a push without
// a status, a first import of a file of the 50 people of a list who unsubscribed and the 20
// who bounced long ago (not in the status feed), with 10 new ones, makes none of them active, and `runs ID`
// counts the 70 as suppressed, on SQLite and Postgres.
func TestRunsCountsLearntSuppressions(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			db := ""
			if backend == "postgres" {
				u, _ := testdb.PostgresSchema(t)
				db = fmt.Sprintf("[database]\nurl = %q\n", u)
			}
			var offset atomic.Int64
			clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			h := setup(t, db, sinktest.WithOmissionRevives(true), sinktest.WithClock(clock))
			list := h.srv.CreateList("Members")
			var file strings.Builder
			file.WriteString("E-post;Fornavn\n")
			for i := 1; i <= 80; i++ {
				fmt.Fprintf(&file, "p%d@example.com;P%d\n", i, i)
			}
			path := filepath.Join(h.dir, "members.csv")
			require.NoError(t, os.WriteFile(path, []byte(file.String()), 0o600))
			offset.Store(int64(-41 * 24 * time.Hour))
			c, err := sink.New(sink.Config{BaseURL: h.srv.URL, UserID: h.srv.User, APIKey: h.srv.Key, HTTPClient: h.srv.Client()})
			require.NoError(t, err)
			people := make([]sink.Subscriber, 70)
			for i := range people {
				people[i] = sink.Subscriber{Email: fmt.Sprintf("p%d@example.com", i+1)}
			}
			_, err = c.BulkInsert(t.Context(), sink.BulkOptions{ListID: list}, people)
			require.NoError(t, err)
			offset.Store(int64(-40 * 24 * time.Hour))
			for i := 1; i <= 70; i++ {
				status := "unsubscribed"
				if i > 50 {
					status = "bounce"
				}
				require.NoError(t, h.srv.SetStatus(fmt.Sprintf("p%d@example.com", i), list, status))
			}
			offset.Store(0)

			run := decode[runJSON](t, h.ok("import", path, "--list", fmt.Sprint(list), "--wait", "--json"))
			require.Equal(t, "completed", run.State)
			require.Equal(t, int64(70), run.Counts.Suppressed)
			require.Equal(t, int64(10), run.Counts.Sent)
			for i := 1; i <= 70; i++ {
				s, _ := h.srv.SubscriberByEmail(fmt.Sprintf("p%d@example.com", i))
				require.NotEqual(t, "active", s.Lists[list].Status, "p%d was made active", i)
			}
			require.Regexp(t, `(?m)^suppressed: +70$`, h.ok("runs", fmt.Sprint(run.ID)))
		})
	}
}

// TestImportWhoseEveryRowIsRefusedExits1: `import --wait` of a file whose every row the
// service refuses exits 1 and says what the service answered.
func TestImportWhoseEveryRowIsRefusedExits1(t *testing.T) {
	t.Parallel()
	h := setup(t, "", sinktest.WithGenderValues("M", "K"), sinktest.WithRowMessages(true))
	list := h.srv.CreateList("Members")
	path := filepath.Join(h.dir, "people.csv")
	require.NoError(t, os.WriteFile(path, []byte("E-post;Kjønn\nada@example.com;kvinne\nalan@example.com;mann\n"), 0o600))
	r := h.run("", "import", path, "--list", fmt.Sprint(list), "--wait")
	require.Equal(t, ExitFailure, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout+r.stderr, "the service refused every row it was sent (2 rows, none accepted)")
	require.Contains(t, r.stdout+r.stderr, `is not one of M, K`)
}
