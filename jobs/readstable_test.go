package jobs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// TestReadStable: a run and a preview read a SQL source in a stable order, by the column the
// mapping sends as external_id when it has one (sources.TestSQLStableOrder shows the order);
// files are read as they are.
func TestReadStable(t *testing.T) {
	t.Parallel()
	sql := sources.Config{Kind: sources.KindSQL, Driver: "sqlite", DSN: "x.db", Query: "SELECT * FROM c"}
	keyed := &mapping.Spec{Columns: map[string]mapping.Column{
		"email": {To: sink.FieldEmail}, "crm_id": {To: sink.FieldExternalID},
	}}
	got := streamSpec{source: sql, mapping: keyed}.sourceConfig()
	require.True(t, got.Stable)
	require.Equal(t, "crm_id", got.OrderBy)

	got = streamSpec{source: sql}.sourceConfig()
	require.True(t, got.Stable)
	require.Empty(t, got.OrderBy)

	file := sources.Config{Path: "a.csv"}
	require.False(t, streamSpec{source: file, mapping: keyed}.sourceConfig().Stable)
}
