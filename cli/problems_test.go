package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunShowsEveryProblemOfARow: a row with a bad phone, a bad date and a bad gender is
// rejected once, and preview, runs ID and the rejects export each give all three reasons.
func TestRunShowsEveryProblemOfARow(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := filepath.Join(h.dir, "three.csv")
	require.NoError(t, os.WriteFile(file, []byte("E-post;Mobil;Fødselsdato;Kjønn\n"+
		"ada@example.com;12;31.02.1987;kanskje\ngrace@example.com;;;\n"), 0o600))

	preview := h.ok("preview", file)
	require.Contains(t, preview, `2     Mobil        invalid_phone   "12"`)
	require.Contains(t, preview, `2     Fødselsdato  invalid_date    "31.02.1987"`)
	require.Contains(t, preview, `2     Kjønn        invalid_gender  "kanskje"`)
	require.Contains(t, preview, "2 rows read: 1 mapped, 1 rejected (invalid_phone 1)")

	run := decode[runJSON](t, h.ok("import", file, "--list", fmt.Sprint(list), "--wait", "--json"))
	require.Equal(t, int64(1), run.Counts.Rejected, "one row, counted once")
	require.Equal(t, int64(1), run.Counts.Sent)

	show := h.ok("runs", fmt.Sprint(run.ID))
	require.Contains(t, show, `line 2 column "Mobil" "12": invalid_phone: `)
	require.Contains(t, show, `line 2 column "Fødselsdato" "31.02.1987": invalid_date: the birthday is not a day of the calendar`)
	require.Contains(t, show, `line 2 column "Kjønn" "kanskje": invalid_gender: `)

	export := h.ok("runs", fmt.Sprint(run.ID), "--rejects", "-")
	require.Contains(t, export, `;"Mobil; Fødselsdato; Kjønn";"invalid_phone; invalid_date; invalid_gender";`, "a semicolon file gives a semicolon export")
}
