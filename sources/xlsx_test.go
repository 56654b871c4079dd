package sources_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"

	"github.com/subsync/subsync/sources"
)

func openXLSX(t *testing.T, path string, opts sources.XLSXOptions) *sources.XLSXReader {
	t.Helper()
	r, err := sources.OpenXLSX(context.Background(), path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func style(t *testing.T, f *excelize.File, s excelize.Style) int {
	t.Helper()
	id, err := f.NewStyle(&s)
	require.NoError(t, err)
	return id
}

func ptr[T any](v T) *T { return &v }

// contactWorkbook is a sheet as people keep them: a title, a blank row, the header on row
// 3, dates in two formats, phone numbers and postcodes stored as numbers, a formatted
// but empty column and formatted empty rows below the data.
func contactWorkbook(t *testing.T) string {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	const s = "Sheet1"
	set := func(cell string, v any, styleID int) {
		require.NoError(t, f.SetCellValue(s, cell, v))
		if styleID != 0 {
			require.NoError(t, f.SetCellStyle(s, cell, cell, styleID))
		}
	}
	set("A1", "Medlemsliste 2024", style(t, f, excelize.Style{Font: &excelize.Font{Bold: true, Size: 16}}))
	require.NoError(t, f.SetSheetRow(s, "A3", &[]any{"E-post", "Navn", "Født", "Medlem siden", "Telefon", "Mobil", "Postnr", "Poststed", "Sist endret", "Kontingent", "Aktiv", " "}))
	date := style(t, f, excelize.Style{NumFmt: 14})                               // m/d/yy in Excel's list, shown in the locale's format
	norwegianDate := style(t, f, excelize.Style{CustomNumFmt: ptr("dd.mm.yyyy")}) // what a Norwegian user types
	dateTime := style(t, f, excelize.Style{NumFmt: 22})
	general := style(t, f, excelize.Style{Font: &excelize.Font{Italic: true}}) // General, with a style
	integer := style(t, f, excelize.Style{NumFmt: 1})                          // 0
	postcode := style(t, f, excelize.Style{CustomNumFmt: ptr("0000")})
	money := style(t, f, excelize.Style{NumFmt: 4}) // #,##0.00

	set("A4", "ola@example.no", 0)
	set("B4", "Ola Nordmann", 0)
	set("C4", time.Date(1980, 5, 17, 0, 0, 0, 0, time.UTC), date)
	set("D4", time.Date(2019, 1, 2, 0, 0, 0, 0, time.UTC), norwegianDate)
	set("E4", 4791234567, general)
	set("F4", 447700900123, 0)
	set("G4", 150, postcode)
	set("H4", "Oslo", 0)
	set("I4", time.Date(2024, 1, 31, 13, 45, 10, 0, time.UTC), dateTime)
	set("J4", 1234.5, money)
	set("K4", true, 0)

	set("A5", "kari@example.no", 0)
	set("B5", "Kari Nordmann", 0)
	set("E5", 4790000000, integer)
	set("G5", "0150", 0) // typed as text
	set("H5", "Oslo", 0)
	set("J5", 0.1, general)

	// Formatting below the data and to the right: no values, no rows.
	empty := style(t, f, excelize.Style{Fill: excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"FFFF00"}}})
	require.NoError(t, f.SetCellStyle(s, "L3", "L20", empty))
	require.NoError(t, f.SetCellStyle(s, "A6", "K20", empty))
	path := filepath.Join(t.TempDir(), "medlemmer.xlsx")
	require.NoError(t, f.SaveAs(path))
	return path
}

func TestXLSXContactSheet(t *testing.T) {
	t.Parallel()
	path := contactWorkbook(t)
	r := openXLSX(t, path, sources.XLSXOptions{HeaderRow: 3})
	require.Equal(t, "Sheet1", r.Sheet())
	require.Equal(t, []string{"E-post", "Navn", "Født", "Medlem siden", "Telefon", "Mobil", "Postnr", "Poststed", "Sist endret", "Kontingent", "Aktiv"}, r.Header(),
		"the formatted empty column L has no name")
	requireRows(t, []row{
		{line: 4, values: []string{"ola@example.no", "Ola Nordmann", "1980-05-17", "2019-01-02", "4791234567", "447700900123", "0150", "Oslo", "2024-01-31T13:45:10", "1,234.50", "TRUE"}},
		{line: 5, values: []string{"kari@example.no", "Kari Nordmann", "", "", "4790000000", "", "0150", "Oslo", "", "0.1", ""}},
	}, readAll(t, r))
	require.Equal(t, int64(2), r.Progress().Rows)

	t.Run("without header_row the title is the header", func(t *testing.T) {
		t.Parallel()
		r := openXLSX(t, path, sources.XLSXOptions{})
		require.Equal(t, []string{"Medlemsliste 2024"}, r.Header())
		rows := readAll(t, r)
		require.Len(t, rows, 3, "the header row and both data rows are row errors")
		require.Contains(t, rows[0].errHas, `sheet "Sheet1" row 3 column 2: cell B3 has a value but column B has no header (is the header below a title row? set header_row)`)
	})
}

func TestXLSXSheetChoice(t *testing.T) {
	t.Parallel()
	f := excelize.NewFile()
	for _, name := range []string{"Skjult", "Kunder", "Andre"} {
		_, err := f.NewSheet(name)
		require.NoError(t, err)
		require.NoError(t, f.SetSheetRow(name, "A1", &[]any{"email"}))
		require.NoError(t, f.SetSheetRow(name, "A2", &[]any{strings.ToLower(name) + "@example.no"}))
	}
	require.NoError(t, f.DeleteSheet("Sheet1"))
	f.SetActiveSheet(1) // Excel does not hide the active sheet
	require.NoError(t, f.SetSheetVisible("Skjult", false))
	visible, err := f.GetSheetVisible("Skjult")
	require.NoError(t, err)
	require.False(t, visible)
	path := filepath.Join(t.TempDir(), "book.xlsx")
	require.NoError(t, f.SaveAs(path))
	require.NoError(t, f.Close())

	tests := []struct {
		name      string
		opts      sources.XLSXOptions
		wantSheet string
		wantErr   string
	}{
		{"first visible", sources.XLSXOptions{}, "Kunder", ""},
		{"by name, any case", sources.XLSXOptions{Sheet: "andre"}, "Andre", ""},
		{"a hidden one by name", sources.XLSXOptions{Sheet: "Skjult"}, "Skjult", ""},
		{"by index", sources.XLSXOptions{SheetIndex: 2}, "Andre", ""},
		{"no such name", sources.XLSXOptions{Sheet: "Members"}, "", `no sheet named "Members"; the workbook has "Skjult", "Kunder", "Andre"`},
		{"index too large", sources.XLSXOptions{SheetIndex: 3}, "", "sheet_index 3: the workbook has 3 sheets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := sources.OpenXLSX(context.Background(), path, tt.opts)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			defer r.Close()
			require.Equal(t, tt.wantSheet, r.Sheet())
			rows := readAll(t, r)
			require.Equal(t, []string{strings.ToLower(tt.wantSheet) + "@example.no"}, rows[0].values)
		})
	}
}

// rewriteZip copies the zip at src to dst; replace may write an entry itself (and return
// true) instead of the copy.
func rewriteZip(t *testing.T, src, dst string, replace func(f *zip.File, w *zip.Writer) bool) {
	t.Helper()
	zr, err := zip.OpenReader(src)
	require.NoError(t, err)
	defer zr.Close()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if replace(f, w) {
			continue
		}
		require.NoError(t, w.Copy(f))
	}
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(dst, buf.Bytes(), 0o600))
}

func simpleWorkbook(t *testing.T, rows int) string {
	t.Helper()
	table := [][]string{{"email", "name"}}
	for i := range rows {
		table = append(table, []string{fmt.Sprintf("user%d@example.com", i), "Name"})
	}
	f := excelize.NewFile()
	defer f.Close()
	for i, row := range table {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		require.NoError(t, f.SetSheetRow("Sheet1", cell, &row))
	}
	path := filepath.Join(t.TempDir(), "simple.xlsx")
	require.NoError(t, f.SaveAs(path))
	return path
}

func TestXLSXTotalRowsFromDimension(t *testing.T) {
	t.Parallel()
	src := simpleWorkbook(t, 4)
	dst := filepath.Join(t.TempDir(), "dim.xlsx")
	rewriteZip(t, src, dst, func(f *zip.File, w *zip.Writer) bool {
		if f.Name != "xl/worksheets/sheet1.xml" {
			return false
		}
		rc, err := f.Open()
		require.NoError(t, err)
		var b bytes.Buffer
		_, err = b.ReadFrom(rc)
		require.NoError(t, err)
		xml := strings.Replace(b.String(), `<dimension ref="A1">`, `<dimension ref="A1:B5">`, 1)
		require.Contains(t, xml, `ref="A1:B5"`)
		fw, err := w.Create(f.Name)
		require.NoError(t, err)
		_, err = fw.Write([]byte(xml))
		require.NoError(t, err)
		return true
	})
	r := openXLSX(t, dst, sources.XLSXOptions{})
	require.Equal(t, int64(4), r.Progress().TotalRows, "rows 2..5 below the header")
	require.Len(t, readAll(t, r), 4)
}

// Broken workbooks give a clear error at open, never a panic or a hang.
func TestXLSXBrokenFiles(t *testing.T) {
	t.Parallel()
	good := simpleWorkbook(t, 50)
	goodBytes, err := os.ReadFile(good)
	require.NoError(t, err)

	encrypted := filepath.Join(t.TempDir(), "secret.xlsx")
	f, err := excelize.OpenFile(good)
	require.NoError(t, err)
	require.NoError(t, f.SaveAs(encrypted, excelize.Options{Password: "hemmelig"}))
	require.NoError(t, f.Close())

	sheetEntry := func(declared uint64, data []byte) func(f *zip.File, w *zip.Writer) bool {
		return func(f *zip.File, w *zip.Writer) bool {
			if f.Name != "xl/worksheets/sheet1.xml" {
				return false
			}
			var compressed bytes.Buffer
			fw, err := flate.NewWriter(&compressed, flate.BestCompression)
			require.NoError(t, err)
			_, err = fw.Write(data)
			require.NoError(t, err)
			require.NoError(t, fw.Close())
			raw, err := w.CreateRaw(&zip.FileHeader{
				Name: f.Name, Method: zip.Deflate, CRC32: 0,
				CompressedSize64: uint64(compressed.Len()), UncompressedSize64: declared,
			})
			require.NoError(t, err)
			_, err = raw.Write(compressed.Bytes())
			require.NoError(t, err)
			return true
		}
	}
	bomb := bytes.Repeat([]byte("<row></row>"), 1<<20) // 11 MB of rows, a few KB deflated
	dir := t.TempDir()
	honestBomb := filepath.Join(dir, "honest-bomb.xlsx")
	rewriteZip(t, good, honestBomb, sheetEntry(uint64(len(bomb)), bomb))
	hugeBomb := filepath.Join(dir, "huge-bomb.xlsx")
	rewriteZip(t, good, hugeBomb, sheetEntry(40<<30, bomb[:1000]))
	lyingBomb := filepath.Join(dir, "lying-bomb.xlsx")
	rewriteZip(t, good, lyingBomb, sheetEntry(1000, bomb))
	corrupt := filepath.Join(dir, "corrupt.xlsx")
	rewriteZip(t, good, corrupt, func(f *zip.File, w *zip.Writer) bool {
		if f.Name != "xl/worksheets/sheet1.xml" {
			return false
		}
		rc, err := f.OpenRaw()
		require.NoError(t, err)
		var raw bytes.Buffer
		_, err = raw.ReadFrom(rc)
		require.NoError(t, err)
		data := raw.Bytes()
		for i := len(data) / 3; i < len(data)/3+16; i++ {
			data[i] ^= 0x5A
		}
		fh := f.FileHeader
		fw, err := w.CreateRaw(&fh)
		require.NoError(t, err)
		_, err = fw.Write(data)
		require.NoError(t, err)
		return true
	})
	notWorkbook := filepath.Join(dir, "photos.xlsx")
	rewriteZip(t, good, notWorkbook, func(f *zip.File, w *zip.Writer) bool { return strings.HasPrefix(f.Name, "xl/") })
	emptySheet := filepath.Join(dir, "empty.xlsx")
	ef := excelize.NewFile()
	require.NoError(t, ef.SaveAs(emptySheet))
	require.NoError(t, ef.Close())

	tests := []struct {
		name    string
		path    string
		opts    sources.XLSXOptions
		wantIs  error
		wantHas string
	}{
		{"truncated", writeFile(t, "cut.xlsx", goodBytes[:len(goodBytes)/2]), sources.XLSXOptions{}, nil, "not a readable workbook (truncated or corrupt?)"},
		{"an .xls", writeFile(t, "old.xlsx", oleFile(false)), sources.XLSXOptions{}, sources.ErrLegacyXLS, "Excel 97-2003"},
		{"encrypted", encrypted, sources.XLSXOptions{}, sources.ErrEncryptedWorkbook, "save a copy without a password"},
		{"CSV text", writeFile(t, "text.xlsx", []byte("email,name\na@x.no,A\n")), sources.XLSXOptions{}, sources.ErrContentMismatch, "the file is text (a CSV file?), not an .xlsx workbook"},
		{"empty file", writeFile(t, "nothing.xlsx", nil), sources.XLSXOptions{}, sources.ErrContentMismatch, "the file is empty"},
		{"binary", writeFile(t, "pic.xlsx", []byte("\x89PNG\r\n\x1a\nrest")), sources.XLSXOptions{}, sources.ErrContentMismatch, "a PNG image"},
		{"zip without a workbook", notWorkbook, sources.XLSXOptions{}, sources.ErrContentMismatch, "a zip archive without an Excel workbook"},
		{"zip bomb over the limit", honestBomb, sources.XLSXOptions{MaxUnzipSize: 4 << 20}, sources.ErrTooLarge, "(a zip bomb?)"},
		{"zip bomb declaring 40 GB", hugeBomb, sources.XLSXOptions{}, sources.ErrTooLarge, "(a zip bomb?)"},
		{"zip bomb lying about its size", lyingBomb, sources.XLSXOptions{}, sources.ErrTooLarge, "unpacks to more than the 1000 bytes its header declares"},
		{"corrupt sheet data", corrupt, sources.XLSXOptions{}, nil, "unpack xl/worksheets/sheet1.xml"},
		{"empty sheet", emptySheet, sources.XLSXOptions{}, sources.ErrNoHeader, `sheet "Sheet1" is empty`},
		{"header_row past the end", good, sources.XLSXOptions{HeaderRow: 99}, sources.ErrNoHeader, `header_row 99 is past the last row (51)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			tt.opts.TempDir = tmp
			r, err := sources.OpenXLSX(context.Background(), tt.path, tt.opts)
			require.Error(t, err)
			require.Nil(t, r)
			if tt.wantIs != nil {
				require.ErrorIs(t, err, tt.wantIs)
			}
			require.Contains(t, err.Error(), tt.wantHas)
			require.Contains(t, err.Error(), tt.path, "the error names the file")
			left, err := os.ReadDir(tmp)
			require.NoError(t, err)
			require.Empty(t, left, "no temporary files left behind")
		})
	}
}

// A large worksheet and a large shared-string table are not unpacked to disk (the worksheet
// is streamed, the shared strings held by the reader); the reader's temporary directory
// holds its lock only, and is removed on Close.
func TestXLSXTemporaryFiles(t *testing.T) {
	t.Parallel()
	path := simpleWorkbook(t, 40000) // a worksheet and a shared-string table over 1 MiB
	tmp := t.TempDir()
	r, err := sources.OpenXLSX(context.Background(), path, sources.XLSXOptions{TempDir: tmp})
	require.NoError(t, err)
	used, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Len(t, used, 1, "the reader's directory")
	inside, err := os.ReadDir(filepath.Join(tmp, used[0].Name()))
	require.NoError(t, err)
	for _, e := range inside {
		require.Equal(t, ".lock", e.Name(), "nothing of the workbook is unpacked to disk")
	}
	rows := readAll(t, r)
	require.Len(t, rows, 40000)
	require.Equal(t, []string{"user39999@example.com", "Name"}, rows[39999].values)
	require.Equal(t, 40001, rows[39999].line)
	require.NoError(t, r.Close())
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left)
}

func TestXLSXCancelledOpen(t *testing.T) {
	t.Parallel()
	path := simpleWorkbook(t, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := sources.OpenXLSX(ctx, path, sources.XLSXOptions{})
	require.ErrorIs(t, err, context.Canceled)
}

// hostileWorkbook writes a workbook whose worksheet (or shared-string table) part is the
// given XML, deflated: a few kilobytes on disk whatever it unpacks to.
func hostileWorkbook(t *testing.T, sheetXML, sstXML []byte) string {
	t.Helper()
	good := simpleWorkbook(t, 1)
	dst := filepath.Join(t.TempDir(), "hostile.xlsx")
	rewriteZip(t, good, dst, func(f *zip.File, w *zip.Writer) bool {
		var data []byte
		switch f.Name {
		case "xl/worksheets/sheet1.xml":
			data = sheetXML
		case "xl/sharedStrings.xml":
			data = sstXML
		}
		if data == nil {
			return false
		}
		fw, err := w.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Deflate})
		require.NoError(t, err)
		_, err = fw.Write(data)
		require.NoError(t, err)
		return true
	})
	st, err := os.Stat(dst)
	require.NoError(t, err)
	require.Less(t, st.Size(), int64(1<<20), "the hostile workbook stays small on disk")
	return dst
}

const sheetHead = `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`
const sheetTail = `</sheetData></worksheet>`

// A workbook cannot take the machine: a worksheet that unpacks to more than a worksheet
// may, and a cell or shared string larger than a cell may, fail with ErrTooLarge, within
// the reader's bounds of memory (the limits are small here to keep the test quick; the
// defaults are DefaultMaxSheetSize and DefaultMaxCellSize).
func TestXLSXHostileWorkbooks(t *testing.T) {
	t.Parallel()
	header := `<row r="1"><c r="A1" t="inlineStr"><is><t>email</t></is></c></row>`
	row := func(n int, v string) string {
		return fmt.Sprintf(`<row r="%d"><c r="A%d" t="inlineStr"><is><t>%s</t></is></c></row>`, n, n, v)
	}
	whitespace := []byte(sheetHead + header + row(2, "a@example.no") + strings.Repeat(" ", 24<<20) + row(3, "b@example.no") + sheetTail)
	bigCell := []byte(sheetHead + header + row(2, strings.Repeat("a", 3<<20)) + sheetTail)
	bigTag := []byte(sheetHead + header + `<row r="2"><c r="A2" t="inlineStr" x="` + strings.Repeat("a", 3<<20) + `"><is><t>a</t></is></c></row>` + sheetTail)
	sst := []byte(`<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>email</t></si><si><t>` + strings.Repeat("b", 3<<20) + `</t></si></sst>`)
	sharedRef := []byte(sheetHead + `<row r="1"><c r="A1" t="s"><v>0</v></c></row><row r="2"><c r="A2" t="s"><v>1</v></c></row>` + sheetTail)

	tests := []struct {
		name    string
		path    string
		opts    sources.XLSXOptions
		wantHas string
	}{
		{"white space past the worksheet limit", hostileWorkbook(t, whitespace, nil), sources.XLSXOptions{MaxSheetSize: 16 << 20},
			"xl/worksheets/sheet1.xml unpacks to 25166186 bytes, more than the 16777216 one part may"},
		{"a cell past the cell limit", hostileWorkbook(t, bigCell, nil), sources.XLSXOptions{},
			"a cell in row 2 is larger than 1048576 bytes"},
		{"a cell's tag past the cell limit", hostileWorkbook(t, bigTag, nil), sources.XLSXOptions{},
			"larger than 1048576 bytes"},
		{"a shared string past the cell limit", hostileWorkbook(t, sharedRef, sst), sources.XLSXOptions{},
			"shared string 1 is larger than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.opts.TempDir = t.TempDir()
			r, err := sources.OpenXLSX(context.Background(), tt.path, tt.opts)
			if err == nil {
				defer r.Close()
				_, err = readAllErr(r)
			}
			require.ErrorIs(t, err, sources.ErrTooLarge)
			require.ErrorContains(t, err, tt.wantHas)
			require.ErrorContains(t, err, tt.path)
		})
	}

	t.Run("within the limits the same rows read", func(t *testing.T) {
		t.Parallel()
		r := openXLSX(t, hostileWorkbook(t, whitespace, nil), sources.XLSXOptions{})
		rows := readAll(t, r)
		require.Len(t, rows, 2)
		require.Equal(t, []string{"b@example.no"}, rows[1].values)
	})
}

// readAllErr reads r to the end and returns the first fatal error.
func readAllErr(r sources.Reader) (int, error) {
	n := 0
	for {
		_, err := r.Next(context.Background())
		var rowErr *sources.RowError
		switch {
		case err == nil, errors.As(err, &rowErr):
			n++
		case errors.Is(err, io.EOF):
			return n, nil
		default:
			return n, err
		}
	}
}

// A worksheet that declares an unpacked size over the limit is refused before a byte of it
// is unpacked, with the default limits.
func TestXLSXSheetDeclaredTooLarge(t *testing.T) {
	t.Parallel()
	good := simpleWorkbook(t, 1)
	dst := filepath.Join(t.TempDir(), "declared.xlsx")
	rewriteZip(t, good, dst, func(f *zip.File, w *zip.Writer) bool {
		if f.Name != "xl/worksheets/sheet1.xml" {
			return false
		}
		raw, err := w.CreateRaw(&zip.FileHeader{Name: f.Name, Method: zip.Deflate, CompressedSize64: 2, UncompressedSize64: 1900 << 20})
		require.NoError(t, err)
		_, err = raw.Write([]byte{3, 0})
		require.NoError(t, err)
		return true
	})
	_, err := sources.OpenXLSX(context.Background(), dst, sources.XLSXOptions{TempDir: t.TempDir()})
	require.ErrorIs(t, err, sources.ErrTooLarge)
	require.ErrorContains(t, err, "xl/worksheets/sheet1.xml unpacks to 1992294400 bytes, more than the 1073741824 one part may")
}

// The readers of a process share a memory budget: a workbook whose shared strings alone
// need more fails at once; two that fit one at a time take turns.
func TestXLSXMemoryBudget(t *testing.T) {
	// Not parallel: it changes the process's budget.
	sst := []byte(`<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>email</t></si><si><t>` + strings.Repeat("b", 4<<20) + `</t></si></sst>`)
	sheet := []byte(sheetHead + `<row r="1"><c r="A1" t="s"><v>0</v></c></row>` + sheetTail)
	path := hostileWorkbook(t, sheet, sst)
	defer sources.SetXLSXMemory(sources.DefaultXLSXMemory)

	sources.SetXLSXMemory(4 << 20)
	_, err := sources.OpenXLSX(context.Background(), path, sources.XLSXOptions{TempDir: t.TempDir(), MaxCellSize: 8 << 20})
	require.ErrorIs(t, err, sources.ErrTooLarge)
	require.ErrorContains(t, err, "more than the 4194304 all workbooks read at once may take")

	sources.SetXLSXMemory(64 << 20)
	opts := sources.XLSXOptions{TempDir: t.TempDir(), MaxCellSize: 8 << 20}
	first, err := sources.OpenXLSX(context.Background(), path, opts)
	require.NoError(t, err)
	// The second waits for its turn until the first closes, here until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = sources.OpenXLSX(ctx, path, opts)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "wait for memory")
	require.NoError(t, first.Close())
	second, err := sources.OpenXLSX(context.Background(), path, opts)
	require.NoError(t, err)
	require.NoError(t, second.Close())
}

// TestXLSXHelperHold is run by TestXLSXKilledRunTempFiles in a child process: it opens a
// workbook, says so, and holds it open until it is killed.
func TestXLSXHelperHold(t *testing.T) {
	path := os.Getenv("SUBSYNC_TEST_HOLD_XLSX")
	if path == "" {
		return // only as the child process
	}
	_, err := sources.OpenXLSX(context.Background(), path, sources.XLSXOptions{TempDir: os.Getenv("SUBSYNC_TEST_HOLD_TMP")})
	require.NoError(t, err)
	fmt.Println("opened")
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed
}

// The temporary files of a run killed with SIGKILL are removed when the next workbook is
// opened; those of a run still open are not.
func TestXLSXKilledRunTempFiles(t *testing.T) {
	t.Parallel()
	path := simpleWorkbook(t, 3)
	tmp := t.TempDir()
	hold := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestXLSXHelperHold$")
		cmd.Env = append(os.Environ(), "SUBSYNC_TEST_HOLD_XLSX="+path, "SUBSYNC_TEST_HOLD_TMP="+tmp)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		t.Cleanup(func() { _ = stdin.Close() })
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "opened\n", line)
		return cmd
	}
	killed := hold()
	require.NoError(t, killed.Process.Kill())
	require.Error(t, killed.Wait())
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Len(t, left, 1, "the killed run left its directory")
	stale := left[0].Name()

	r, err := sources.OpenXLSX(context.Background(), path, sources.XLSXOptions{TempDir: tmp})
	require.NoError(t, err)
	left, err = os.ReadDir(tmp)
	require.NoError(t, err)
	require.Len(t, left, 1, "this reader's directory")
	require.NotEqual(t, stale, left[0].Name(), "the killed run's directory is removed")

	alive := hold()
	t.Cleanup(func() { _ = alive.Process.Kill(); _ = alive.Wait() })
	left, err = os.ReadDir(tmp)
	require.NoError(t, err)
	require.Len(t, left, 2, "a directory of a reader still open is kept")
	require.NoError(t, r.Close())
	left, err = os.ReadDir(tmp)
	require.NoError(t, err)
	require.Len(t, left, 1, "the other process's reader is still open")
	require.NoError(t, alive.Process.Kill())
	_ = alive.Wait()
	r, err = sources.OpenXLSX(context.Background(), path, sources.XLSXOptions{TempDir: tmp})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	left, err = os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left)
}

// peopleWorkbook is a workbook as people make them: a notes sheet first, a hidden sheet,
// then the members with a title and a blank row above the header on row 3.
func peopleWorkbook(t testing.TB) string {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	require.NoError(t, f.SetSheetName("Sheet1", "Notes"))
	require.NoError(t, f.SetSheetRow("Notes", "A1", &[]any{"Read me first"}))
	require.NoError(t, f.SetSheetRow("Notes", "A2", &[]any{"Exported from the member register", "2024-05-01"}))
	for _, name := range []string{"Old", "Medlemmer"} {
		_, err := f.NewSheet(name)
		require.NoError(t, err)
	}
	require.NoError(t, f.SetSheetRow("Old", "A1", &[]any{"E-post"}))
	require.NoError(t, f.SetSheetRow("Old", "A2", &[]any{"old@example.no"}))
	require.NoError(t, f.SetSheetVisible("Old", false))
	require.NoError(t, f.SetSheetRow("Medlemmer", "A1", &[]any{"Medlemsliste 2024"}))
	require.NoError(t, f.SetSheetRow("Medlemmer", "A3", &[]any{"Navn", "E-post", "Telefon"}))
	require.NoError(t, f.SetSheetRow("Medlemmer", "A4", &[]any{"Ola Nordmann", "ola@example.no", 4791234567}))
	require.NoError(t, f.SetSheetRow("Medlemmer", "A5", &[]any{"Kari Nordmann", "kari@example.no", 4790000000}))
	path := filepath.Join(t.TempDir(), "medlemmer.xlsx")
	require.NoError(t, f.SaveAs(path))
	return path
}

// hasEmailColumn stands for the caller's mapping.
func hasEmailColumn(cells []string) bool {
	return slices.ContainsFunc(cells, func(c string) bool { return strings.EqualFold(c, "E-post") })
}

// With no sheet or header row given, IsHeader finds the visible sheet and the row.
func TestXLSXFindsSheetAndHeader(t *testing.T) {
	t.Parallel()
	path := peopleWorkbook(t)
	r := openXLSX(t, path, sources.XLSXOptions{IsHeader: hasEmailColumn})
	require.Equal(t, "Medlemmer", r.Sheet(), "the notes sheet and the hidden one are passed over")
	require.Equal(t, []string{"Navn", "E-post", "Telefon"}, r.Header())
	pr := r.Progress()
	require.Positive(t, pr.TotalBytes, "the worksheet's size gives the progress a total")
	require.Equal(t, []row{
		{line: 4, values: []string{"Ola Nordmann", "ola@example.no", "4791234567"}},
		{line: 5, values: []string{"Kari Nordmann", "kari@example.no", "4790000000"}},
	}, readAll(t, r))
	require.Equal(t, pr.TotalBytes, r.Progress().Bytes, "the whole worksheet is read")

	t.Run("given a sheet, IsHeader is not asked", func(t *testing.T) {
		t.Parallel()
		r := openXLSX(t, path, sources.XLSXOptions{Sheet: "Notes", IsHeader: hasEmailColumn})
		require.Equal(t, []string{"Read me first"}, r.Header())
	})
	t.Run("no row found names what was read", func(t *testing.T) {
		t.Parallel()
		_, err := sources.OpenXLSX(context.Background(), path, sources.XLSXOptions{IsHeader: func([]string) bool { return false }})
		require.ErrorIs(t, err, sources.ErrNoHeader)
		require.ErrorContains(t, err, `no row with a column for the e-mail address in sheet "Notes" rows 1-2, sheet "Medlemmer" rows 1-5; the workbook has "Notes", "Old", "Medlemmer" (set sheet and header_row)`)
	})
}
