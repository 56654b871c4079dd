package state_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestFingerprintStepsMergeParts: saves in steps, as a run makes them every FingerprintFlush
// rows, add a part to each bucket they touch until a bucket has eight, and the save after
// merges its parts into one; every fingerprint saved loads back with its latest payload. (On
// Postgres a step's inserts go to the server together, and a step that merges parts is a
// transaction of its own.)
func TestFingerprintStepsMergeParts(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		want := map[uint64]uint64{}
		set := state.NewFingerprintSet(5)
		merged := false
		for save := range 10 {
			addSaveRound(set, want, "m", save, 200_000)
			steps := 0
			_, before := bucketRows(t, s, 5)
			require.NoError(t, s.SaveFingerprintsStepped(ctx, set, func() { steps++ }))
			require.Equal(t, 16, steps, "save %d", save)
			most, n := bucketRows(t, s, 5)
			require.LessOrEqual(t, most, 8, "save %d: a bucket has at most 8 parts", save)
			merged = merged || n < before
		}
		require.True(t, merged, "the parts were never merged")
		requireFingerprints(t, s, 5, want, "after the saves")
	})
}

// TestFingerprintStatementsBounded: a save's statements carry at most about maxInsertBytes of
// fingerprints, merges of a bucket's parts included, however large the list: a step of 256
// buckets wrote them 64 parts a statement, 3.7 MB each for a ten-million-row list, which the
// driver copied twice more to send. Not parallel: it lowers the bound for the package.
func TestFingerprintStatementsBounded(t *testing.T) {
	defer state.SetMaxInsertBytes(8 << 10)()
	s, trace := newTracedPostgres(t)
	ctx := context.Background()
	set, want := state.NewFingerprintSet(5), map[uint64]uint64{}
	for save := range 10 { // parts merged: see TestFingerprintStepsMergeParts
		for i := range 40_000 {
			e := state.EmailHash(fmt.Sprintf("b%d@example.com", (save*40_000+i)%400_000))
			set.Add(state.Fingerprint{Email: e, Payload: uint64(save + 1)})
			want[e] = uint64(save + 1)
		}
		require.NoError(t, s.SaveFingerprintsStepped(ctx, set, func() {}))
	}
	// A statement ends once its data reaches the bound: it may pass it by one part (a bucket
	// of this list, 400,000 fingerprints: about 2.3 KB).
	require.LessOrEqual(t, trace.maxBytes.Load(), int64(8<<10+4<<10), "the largest statement's data")
	requireFingerprints(t, s, 5, want, "after the saves")
}

// bucketRows returns how many parts the bucket with the most has, and the rows (parts) a
// list's stored fingerprints take.
func bucketRows(t *testing.T, s *state.Store, listID int64) (maxParts, rows int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT COALESCE(MAX(c), 0) FROM
    (SELECT COUNT(*) AS c FROM subsync_fingerprint WHERE list_id = $1 GROUP BY bucket) AS per_bucket`, listID).Scan(&maxParts))
	require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_fingerprint WHERE list_id = $1", listID).Scan(&rows))
	return maxParts, rows
}

// requireFingerprints checks that a list's stored fingerprints load back as want (e-mail hash
// → payload last saved), no more and none stale; what names the save checked, if any.
func requireFingerprints(t *testing.T, s *state.Store, listID int64, want map[uint64]uint64, what string) {
	t.Helper()
	got, err := s.LoadFingerprints(context.Background(), listID)
	require.NoError(t, err)
	require.Equal(t, len(want), got.Len(), what)
	for e, p := range want {
		v, ok := lookup(got, e)
		require.True(t, ok, "%s: an e-mail lost", what)
		require.Equal(t, p, v, "%s: a stale payload", what)
	}
}

// addSaveRound adds to set, and notes in want, the fingerprints of one save of an import in
// rounds: 25,000 addresses prefix<n>@example.com, n going round modulo addresses, each with
// the payload save+1.
func addSaveRound(set *state.FingerprintSet, want map[uint64]uint64, prefix string, save, addresses int) {
	for i := range 25_000 {
		e := state.EmailHash(fmt.Sprintf("%s%d@example.com", prefix, (save*25_000+i)%addresses))
		set.Add(state.Fingerprint{Email: e, Payload: uint64(save + 1)})
		want[e] = uint64(save + 1)
	}
}

// TestFingerprintMergesKeepLatest: over many saves in steps (a long import), where a bucket's
// newer parts are merged and its older ones kept, no bucket has more than eight parts and
// every fingerprint loads back with the payload saved last, though the older parts kept hold
// earlier payloads of the same e-mails.
func TestFingerprintMergesKeepLatest(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		want := map[uint64]uint64{}
		set := state.NewFingerprintSet(6)
		for save := range 26 {
			addSaveRound(set, want, "k", save, 140_000)
			require.NoError(t, s.SaveFingerprintsStepped(ctx, set, func() {}))
			most, _ := bucketRows(t, s, 6)
			require.LessOrEqual(t, most, 8, "save %d: a bucket has at most 8 parts", save)
			if save == 16 || save == 23 || save == 25 {
				requireFingerprints(t, s, 6, want, fmt.Sprintf("after save %d", save))
			}
		}
	})
}
