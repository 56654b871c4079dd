package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

// The workbook corpus (sources/testdata/workbooks: workbooks made by openpyxl, XlsxWriter,
// SheetJS, ExcelJS, excelize and LibreOffice from the rows of rows.csv) previews exactly as
// the CSV file of the same rows: every value of every column, mapped (custom fields too),
// the same rejects on the same lines. Only the line's sheet name (Kontakter:6) differs.
func TestWorkbookCorpusPreviewsLikeCSV(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	for _, label := range []string{"Kundenummer", "Poeng", "Registrert", "Aktiv"} {
		h.srv.CreateCustomField(label, sink.DatatypeString)
	}
	m := filepath.Join(h.dir, "corpus.mapping.toml")
	require.NoError(t, os.WriteFile(m, []byte(`[columns]
"E-post" = "email"
Fornavn = "firstname"
Etternavn = "lastname"
Mobil = "phone"
Postnummer = "zip"
"Fødselsdato" = "birthday"
Firma = "company"
Kundenummer = "custom:Kundenummer"
Poeng = "custom:Poeng"
Registrert = "custom:Registrert"
Aktiv = "custom:Aktiv"
`), 0o600))
	dir := filepath.Join("..", "sources", "testdata", "workbooks")
	csvText := h.ok("preview", filepath.Join(dir, "rows.csv"), "--mapping", m)
	csvJSON := h.ok("preview", filepath.Join(dir, "rows.csv"), "--mapping", m, "--json")
	require.Contains(t, csvText, "7 mapped, 1 rejected")
	for _, want := range []string{"+4791234567", "123456789012345", "0.00001", "2024-01-31T13:45:00", "TRUE", "Kjærstad-Øye", "1990-03-04"} {
		require.Contains(t, csvJSON, want)
	}
	books, err := filepath.Glob(filepath.Join(dir, "*.xlsx"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(books), 12)
	for _, book := range books {
		t.Run(strings.TrimSuffix(filepath.Base(book), ".xlsx"), func(t *testing.T) {
			text := h.ok("preview", book, "--mapping", m)
			require.Equal(t, columns(csvText), withoutSheet(text, true))
			js := h.ok("preview", book, "--mapping", m, "--json")
			require.Equal(t, csvJSON, withoutSheet(js, false))
		})
	}
}

// withoutSheet takes the sheet name out of a preview of the corpus: "Kontakter:" before the
// line numbers of the text and the "sheet" members of the JSON. The text's columns are
// compared, not their widths: a run of spaces between two columns becomes a tab.
func withoutSheet(s string, text bool) string {
	if !text {
		return strings.ReplaceAll(s, `"sheet":"Kontakter",`, "")
	}
	return columns(strings.ReplaceAll(s, "Kontakter:", ""))
}

var columnGap = regexp.MustCompile(`  +`)

func columns(s string) string { return columnGap.ReplaceAllString(s, "\t") }
