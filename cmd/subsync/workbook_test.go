package main_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
	"github.com/subsync/subsync/sources/sourcetest"
)

// TestBinaryWorkbookAsPeopleMakeIt: a workbook with a notes sheet first and a title row above
// its header imports with no options (issue 15's first-contact walk).
func TestBinaryWorkbookAsPeopleMakeIt(t *testing.T) {
	t.Parallel()
	srv, dir, env := emulator(t)
	list := srv.CreateList("Medlemmer")
	book := filepath.Join(dir, "medlemmer.xlsx")
	sourcetest.NotesAndTitleWorkbook(t, book, [2]string{"Kari", "kari@example.no"}, [2]string{"Ola", "ola@example.no"})
	r := run(t, dir, env, "import", book, "--list", fmt.Sprint(list), "--wait", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var res struct {
		State  string `json:"state"`
		Counts struct {
			Sent, Rejected int64
		} `json:"counts"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Equal(t, "completed", res.State)
	require.Equal(t, int64(2), res.Counts.Sent)
	require.Zero(t, res.Counts.Rejected)
	require.Len(t, srv.ListSubscribers(list), 2)
}
