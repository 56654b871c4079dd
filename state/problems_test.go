package state_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestRejectKeepsEveryProblem: a rejected row with several problems keeps them all (the run
// history, its pages and the export read them back), is counted once, and is erased when an
// address is in any of them.
func TestRejectKeepsEveryProblem(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		run, err := s.ClaimRun(ctx, claim(1, "o", time.Minute))
		require.NoError(t, err)
		require.NoError(t, s.SetSourceHeader(ctx, run.ID, "o", []string{"E-post", "Mobil", "Født", "Kjønn", "Ref"}))
		more := []state.Problem{
			{Column: "Født", Value: "31.02.1987", Code: "invalid_date", Reason: "the birthday is not a day of the calendar"},
			{Column: "Kjønn", Value: "kanskje", Code: "invalid_gender", Reason: "the gender is not a gender subsync knows"},
			{Column: "Ref", Value: "ida@example.com", Code: "too_long", Reason: "r"},
		}
		rej := state.Reject{Ordinal: 1, Line: 2, Column: "Mobil", Value: "12", Code: "invalid_phone", Reason: "the phone number is too short",
			Row: state.EncodeRow([]string{"ada@example.com", "12", "31.02.1987", "kanskje", "(not in the row)"}), More: more}
		one := state.Reject{Ordinal: 2, Line: 3, Column: "E-post", Value: "x", Code: "invalid_email", Reason: "no @",
			Row: state.EncodeRow([]string{"x", "", "", "", ""})}
		require.NoError(t, s.Checkpoint(ctx, state.Checkpoint{RunID: run.ID, Owner: "o", TTL: time.Minute, Position: 2,
			Delta: state.Counts{Read: 2, Rejected: 2}, Rejects: []state.Reject{rej, one}}))

		got, err := s.RejectsPage(ctx, run.ID, 0, 10)
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, more, got[0].More)
		require.Len(t, got[0].Problems(), 4)
		require.Nil(t, got[1].More)
		var streamed []state.Reject
		require.NoError(t, s.Rejects(ctx, run.ID, func(r state.Reject) error { streamed = append(streamed, r); return nil }))
		require.Equal(t, []state.Reject{rej, one}, streamed)
		r, err := s.Run(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, int64(2), r.Counts.Rejected, "a row counts once")

		var recs [][]string
		require.NoError(t, s.ExportRows(ctx, run.ID, func(cells []string) error {
			recs = append(recs, slices.Clone(cells))
			return nil
		}))
		require.Equal(t, []string{"rejected", "2", "Mobil; Født; Kjønn; Ref", "invalid_phone; invalid_date; invalid_gender; too_long",
			"the phone number is too short; the birthday is not a day of the calendar; the gender is not a gender subsync knows; r"}, recs[1][5:])

		// An address in another problem's value is erased with the reject.
		_, err = s.Erase(ctx, "ida@example.com")
		require.NoError(t, err)
		got, err = s.RejectsPage(ctx, run.ID, 0, 10)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, int64(2), got[0].Ordinal)
	})
}
