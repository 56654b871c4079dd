package jobs_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/state"
)

// TestForgetLeavesNoCopy (#35 point 4): after `forget`, the SQLite file (and its write-ahead
// log) holds no copy of the address, not even in free pages; and a re-import of the address
// written otherwise (a trailing dot, capitals, in angle brackets: rejected as an invalid
// address) keeps no copy of it in its rejects: the reject is the erased person's, with no
// value. Both queues (the file's bytes on SQLite).
func TestForgetLeavesNoCopy(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		const gone = "person7@example.com"
		b := setup(t, backend)
		dir := t.TempDir()
		rt := b.open(t)
		st := rt.State()
		fileHolds := func() int {
			if backend != "sqlite" {
				return 0
			}
			n := 0
			for _, name := range []string{jobs.SQLiteFile, jobs.SQLiteFile + "-wal"} {
				data, err := os.ReadFile(filepath.Join(b.cfg.DataDir, name))
				if !os.IsNotExist(err) {
					require.NoError(t, err)
				}
				n += bytes.Count(bytes.ToLower(data), []byte(gone))
			}
			return n
		}

		// The person in the service, the fingerprints, rejects (a duplicate row) and warnings.
		id, err := rt.EnqueueImport(ctx, jobs.ImportArgs{Path: contacts(t, dir, 20, nil), ListID: b.listID})
		require.Equal(t, int64(20), waitRun(t, rt, id, err).Counts.Sent)
		dup := filepath.Join(dir, "dup.csv")
		require.NoError(t, os.WriteFile(dup, []byte("E-post,Fornavn,Mobil\n"+gone+",Ola,12\n"+gone+",Ola,12\n"), 0o600))
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: dup, ListID: b.listID,
			Mapping: &mapping.Spec{Duplicates: mapping.DuplicatesReject, OnInvalid: mapping.OnInvalidDrop}})
		require.Equal(t, int64(1), waitRun(t, rt, id, err).Counts.Rejected)
		if backend == "sqlite" {
			require.Positive(t, fileHolds(), "the file holds the address before the erasure")
		}

		id, _, err = rt.RequestForget(ctx, []string{gone})
		require.Equal(t, state.RunCompleted, waitRun(t, rt, id, err).State)
		require.Empty(t, scanFor(t, st.DB(), st.Dialect(), gone))
		require.Zero(t, fileHolds(), "no copy of the address left in the database file's pages")

		// Re-imported as rows the mapping rejects as invalid addresses.
		again := filepath.Join(dir, "again.csv")
		require.NoError(t, os.WriteFile(again, []byte("E-post,Fornavn\nperson1@example.com,Kari\n"+
			gone+".,Ola\nPERSON7@Example.COM. ,Ola\n<"+gone+">,Ola\n"), 0o600))
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: again, ListID: b.listID})
		run := waitRun(t, rt, id, err)
		require.Equal(t, int64(3), run.Counts.Rejected)
		var rejects []state.Reject
		require.NoError(t, st.Rejects(ctx, run.ID, func(r state.Reject) error { rejects = append(rejects, r); return nil }))
		require.Len(t, rejects, 3)
		for _, r := range rejects {
			require.Equal(t, mapping.CodeErased, r.Code, "line %d", r.Line)
			require.Empty(t, r.Value)
			require.Empty(t, r.Row)
		}
		require.Empty(t, scanFor(t, st.DB(), st.Dialect(), gone), "the rejects keep no copy")
		require.Zero(t, fileHolds())
		require.NotContains(t, b.logs.String(), gone)
	})
}
