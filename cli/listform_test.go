package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink/sinktest"
)

// TestDefaultConfigFindsTheListForm (#28 point 4, Done-when): against a service that takes
// only subscriber_list_id[], an import with the default configuration (no api.list_id_array)
// delivers every row after one refused request, the log names the form, and doctor reports
// the form that works (before: not known yet).
func TestDefaultConfigFindsTheListForm(t *testing.T) {
	t.Parallel()
	h := setup(t, "", sinktest.WithListIDArrayOnly(true))
	list := h.srv.CreateList("Members")
	var file strings.Builder
	file.WriteString("E-post;Fornavn\n")
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&file, "p%d@example.com;P%d\n", i, i)
	}
	path := filepath.Join(h.dir, "members.csv")
	require.NoError(t, os.WriteFile(path, []byte(file.String()), 0o600))
	require.Contains(t, h.ok("doctor"), "skip  the form of the list parameter is not known yet")

	r := h.run("", "import", path, "--list", fmt.Sprint(list), "--wait", "--json")
	require.Equal(t, ExitOK, r.code, r.stderr)
	run := decode[runJSON](t, r.stdout)
	require.Equal(t, "completed", run.State)
	require.Equal(t, int64(1500), run.Counts.Sent)
	require.Len(t, h.srv.ListSubscribers(list), 1500)
	refused := 0
	for _, q := range h.srv.Requests() {
		if q.Method == http.MethodPost && q.Path == sinktest.V2Prefix+"/subscribers/bulkinsert" && q.Status != http.StatusOK {
			refused++
		}
	}
	require.Equal(t, 1, refused, "at most one refused request")
	require.Contains(t, r.stderr, `"msg":"the service takes the list parameter in this form","list_param":"subscriber_list_id[]"`)

	require.Regexp(t, `ok +the service takes lists named as subscriber_list_id\[\] \(learnt .*, remembered for the account\)`, h.ok("doctor"))
}
