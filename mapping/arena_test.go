package mapping

import (
	"testing"

	"github.com/stretchr/testify/require"
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
