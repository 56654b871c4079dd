package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRealExportsImportWithoutMapping imports contact exports in the form Outlook and Google
// Contacts write them (testdata/exports, see its README) with no mapping file: every row with
// at least one valid address is delivered, and the run lists what it dropped as warnings.
func TestRealExportsImportWithoutMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file      string
		delivered map[string]string // e-mail → birthday sent
		rejected  int64
		warnings  []string // in runs ID
	}{
		{"outlook_en.csv", map[string]string{
			"kari.nordmann@example.no": "", "john.smith@example.com": "1985-05-17",
			"mary.jones@example.org": "1990-03-04", "per@hansenbygg.example.no": "",
		}, 1, nil},
		{"google_contacts.csv", map[string]string{
			"ingrid.berg@example.no": "", "lars@olsen.example.no": "1979-02-11", "aase.bo@example.no": "",
		}, 1, []string{
			`line 2 column "E-mail 1 - Value": multiple_emails: the cell holds 2 addresses: the first valid one, ingrid.berg@example.no, was sent`,
			`line 2 column "Birthday": yearless_date:`,
			`line 5 column "Birthday": yearless_date:`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			h := setup(t, "")
			list := h.srv.CreateList("Contacts")
			data, err := os.ReadFile(filepath.Join("testdata", "exports", tc.file))
			require.NoError(t, err)
			file := filepath.Join(h.dir, tc.file)
			require.NoError(t, os.WriteFile(file, data, 0o600))

			run := decode[runJSON](t, h.ok("import", file, "--list", fmt.Sprint(list), "--wait", "--json"))
			require.Equal(t, "completed", run.State)
			require.Equal(t, int64(len(tc.delivered)), run.Counts.Sent)
			require.Equal(t, tc.rejected, run.Counts.Rejected, "only the row without any address")
			got := map[string]string{}
			for _, s := range h.srv.ListSubscribers(list) {
				got[s.Email] = s.Fields["birthday"]
				require.NotEqual(t, "Unspecified", s.Fields["gender"])
			}
			require.Equal(t, tc.delivered, got)
			show := h.ok("runs", fmt.Sprint(run.ID))
			require.Contains(t, show, "missing_email")
			for _, w := range tc.warnings {
				require.Contains(t, show, w)
			}
		})
	}
}
