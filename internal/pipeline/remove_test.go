package pipeline

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// TestCompleteRead: only a read of the whole source tells who left it. A run resumed from a
// checkpoint beyond what the source now holds (the file shrank between two attempts) did not
// read every row before its checkpoint again: it is not complete, and removes nobody.
func TestCompleteRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		rows     int
		startPos int64
		complete bool
	}{
		{"from the start", 50, 0, true},
		{"resumed, every earlier row read again", 50, 30, true},
		{"resumed past the end of a shrunk source", 50, 80, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, _ := stubConfig(t, people(tc.rows, nil), &ackSender{})
			cfg.Roster = state.NewRoster("crm", cfg.ListID)
			e, err := New(cfg)
			require.NoError(t, err)
			require.NoError(t, e.Run(ctx, tc.startPos))
			require.Equal(t, tc.complete, e.Complete())
			if !tc.complete {
				_, err := e.Removals(ctx, nil, true)
				require.ErrorContains(t, err, "only a complete read")
			}
		})
	}
}
