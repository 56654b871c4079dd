package mapping

import (
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// Rows mapped in an Arena are the rows Map makes, and stay so while the Arena goes on
// filling block after block: nothing handed out is written again. A field set on one row
// later (appending to its fields) leaves its neighbours alone.
func TestMapInArenaMatchesMap(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, paceSpec, paceHeader, testFields())
	recs := benchInput(t, 20_000, paceHeader) // values enough for several blocks of each kind
	var a Arena
	rows := make([]Row, len(recs))
	for i, rec := range recs {
		row, rej := m.MapIn(&a, rec)
		require.Nil(t, rej, "line %d", rec.Line)
		rows[i] = row
	}
	rows[0].Sub.SetField("EXTRA9", "added")
	for i, rec := range recs {
		want, rej := m.Map(rec)
		require.Nil(t, rej)
		if i == 0 {
			want.Sub.SetField("EXTRA9", "added")
		}
		require.Equal(t, want, rows[i], "line %d", rec.Line)
	}
}

// Rows adopted into another Arena outlive a Reset of the one they were mapped in, while the
// reset Arena maps the next records in the same blocks; a value used after Reset without
// Adopt reads as invalid UTF-8, not as another row's value.
func TestArenaResetAndAdopt(t *testing.T) {
	t.Parallel()
	// The benchmark's mapping, a custom field whose dates are made in the Arena too, and
	// tags whose spaces are collapsed in the Arena, which Adopt copies too.
	header := append(slices.Clip(paceHeader), "Innmeldt", "Grupper")
	m := mustCompile(t, paceSpec+"Innmeldt = \"custom:Innmeldt\"\nGrupper = { to = \"tags\", separator = \";\" }\n", header, testFields())
	recs := benchInput(t, 6_000, header)
	var chunk, keep Arena
	var kept []Row
	var blocks [2]int
	for round, part := range [][]sources.Record{recs[:3000], recs[3000:]} {
		var stale string
		for i, rec := range part {
			row, rej := m.MapIn(&chunk, rec)
			require.Nil(t, rej, "line %d", rec.Line)
			if i%2 == 0 { // the others are dropped, as a batch drops what the service refused
				keep.Adopt(&row, &chunk)
				kept = append(kept, row)
			} else if stale == "" {
				stale = row.Sub.Email
			}
		}
		if round == 0 {
			blocks = [2]int{len(chunk.texts), len(chunk.fieldSets)}
		}
		require.Equal(t, blocks, [2]int{len(chunk.texts), len(chunk.fieldSets)}, "the second round maps into the first one's blocks")
		require.True(t, utf8.ValidString(stale))
		chunk.Reset()
		require.False(t, utf8.ValidString(stale), "a value used after Reset is poisoned")
	}
	require.Len(t, kept, 3000)
	for i, row := range kept {
		want, rej := m.Map(recs[2*i])
		require.Nil(t, rej)
		require.Equal(t, want, row, "line %d", recs[2*i].Line)
	}
}
