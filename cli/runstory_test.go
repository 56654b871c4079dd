package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// runs ID names the source columns a run did not send, as the log did alone before: those
// neither mapped nor ignored.
func TestRunsNamesColumnsNotSent(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := filepath.Join(h.dir, "members.csv")
	require.NoError(t, os.WriteFile(file, []byte("E-post;Fornavn;Notat;Intern\nada@example.com;Ada;vip;1\n"), 0o600))
	run := decode[runJSON](t, h.ok("import", file, "--list", strconv.FormatInt(list, 10), "--wait", "--json"))
	id := strconv.FormatInt(run.ID, 10)
	shown := decode[runJSON](t, h.ok("runs", id, "--json"))
	require.Equal(t, []string{"Notat", "Intern"}, shown.ColumnsNotSent)
	require.Contains(t, h.ok("runs", id), `"Notat", "Intern" (neither mapped nor ignored)`)
}
