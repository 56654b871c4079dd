package rejectfile

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRestoreCell: a cell quoted for a spreadsheet comes back as it was.
func TestRestoreCell(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"=HYPERLINK(\"http://x\")", "+47 123", "-1", "@SUM(A1)", "\tx", "\rx", "plain", "", "'", "'quoted"} {
		require.Equal(t, v, Restore(Neutralise(v)), "%q", v)
	}
}
