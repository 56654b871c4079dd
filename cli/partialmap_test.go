package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPartialMappingAutoMapsTheRest: a mapping file whose [columns] names only the e-mail
// column (under a name the auto-mapper does not know) still sends the first name, last name
// and phone of columns it does not name, mapped by their names; a column no name places is
// reported as not sent. With auto = false only the named column is sent.
func TestPartialMappingAutoMapsTheRest(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	list := h.srv.CreateList("Members")
	file := filepath.Join(h.dir, "members.csv")
	require.NoError(t, os.WriteFile(file, []byte("Mail;Fornavn;Etternavn;Mobil;Notat\n"+
		"kari@example.no;Kari;Nordmann;912 34 567;vip\n"), 0o600))
	mapFile := filepath.Join(h.dir, "members.mapping.toml")
	require.NoError(t, os.WriteFile(mapFile, []byte("[columns]\nMail = \"email\"\n"), 0o600))

	preview := h.ok("preview", file, "--mapping", mapFile)
	require.Contains(t, preview, `Not mapped, so not sent: "Notat".`)

	run := decode[runJSON](t, h.ok("import", file, "--list", strconv.FormatInt(list, 10), "--mapping", mapFile, "--wait", "--json"))
	require.Equal(t, "completed", run.State)
	subs := h.srv.ListSubscribers(list)
	require.Len(t, subs, 1)
	require.Equal(t, "Kari", subs[0].Fields["firstname"])
	require.Equal(t, "Nordmann", subs[0].Fields["lastname"])
	require.Equal(t, "+4791234567", subs[0].Fields["phone"])
	shown := decode[runJSON](t, h.ok("runs", strconv.FormatInt(run.ID, 10), "--json"))
	require.Equal(t, []string{"Notat"}, shown.ColumnsNotSent)

	require.NoError(t, os.WriteFile(mapFile, []byte("auto = false\n[columns]\nMail = \"email\"\n"), 0o600))
	preview = h.ok("preview", file, "--mapping", mapFile)
	require.Contains(t, preview, `Not mapped, so not sent: "Fornavn", "Etternavn", "Mobil", "Notat".`)
}
