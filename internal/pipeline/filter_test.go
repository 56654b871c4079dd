package pipeline

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// TestFilterDuplicatesAndSuppression: the filter flags a repeated e-mail as a duplicate (sent
// again, last wins), leaves out a suppressed person under skip, and sends them keeping their
// status under update-keep-status; each counted once as an outcome in ordinal order.
func TestFilterDuplicatesAndSuppression(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{SuppressionSkip, SuppressionUpdateKeepStatus} {
		t.Run(mode, func(t *testing.T) {
			r := people(6, nil)
			r.rows[4][0] = "person2@example.com" // row 5 repeats row 2
			cfg, store := stubConfig(t, r, nil)
			cfg.DryRun, cfg.Suppression = true, mode
			store.sup[state.EmailHash("person3@example.com")] = sink.StatusBounce
			e, err := New(cfg)
			require.NoError(t, err)
			c := newChunk(0)
			for {
				rec, err := r.Next(context.Background())
				if err != nil {
					break
				}
				c.recs = append(c.recs, rec)
			}
			e.prod.mapChunk(c)
			require.NoError(t, e.filt.run(context.Background(), c))

			var sent []int64
			for i, row := range c.rows {
				sent = append(sent, row.Ordinal)
				require.Equal(t, row.Ordinal == 5, c.dups[i], "row %d", row.Ordinal)
				if row.Ordinal == 3 {
					require.Equal(t, sink.StatusBounce, row.Status, "sent keeping its status")
				}
			}
			var kinds []outcomeKind
			for _, o := range c.outcomes {
				kinds = append(kinds, o.kind)
			}
			require.Equal(t, []outcomeKind{outSuppressed, outDuplicate}, kinds)
			if mode == SuppressionSkip {
				require.Equal(t, []int64{1, 2, 4, 5, 6}, sent)
			} else {
				require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, sent)
			}
		})
	}
}

// TestPayloadHashCoversExternalID: a delta sync sends a row again when only its external_id
// changed, while a row without one keeps the fingerprint it had before external_id existed
// (an upgrade does not re-send a whole list).
func TestPayloadHashCoversExternalID(t *testing.T) {
	t.Parallel()
	var seed state.Hasher
	row := mapping.Row{Sub: sink.Subscriber{Email: "kari@example.no", Firstname: "Kari"}}
	plain := payloadHash(seed, &row)
	row.Sub.ExternalID = "crm-1"
	first := payloadHash(seed, &row)
	row.Sub.ExternalID = "crm-2"
	second := payloadHash(seed, &row)
	require.NotEqual(t, plain, first)
	require.NotEqual(t, first, second)
	row.Sub.ExternalID = ""
	require.Equal(t, plain, payloadHash(seed, &row))
}
