package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"
)

// The streaming worksheet reader must give every cell the text excelize's row iterator
// gives (after dataFormats and isoDate, as the reader did before it streamed sheets). These
// tests write workbooks with every kind of cell and style the other tests know, read them
// both ways and compare.

// genCell is one generated cell: kind picks how it is written (see writeGenCell).
type genCell struct {
	kind int
	text string
	num  float64
	i    int64
}

const genKinds = 21

// genColumns is the width of a generated sheet; row 1 is its header.
const genColumns = 6

// genStyles creates the styles of generated cells as they are first used (a workbook
// with few cells stays quick to write).
type genStyles struct {
	f   *excelize.File
	ids map[string]int
}

func newGenStyles(f *excelize.File) *genStyles {
	return &genStyles{f: f, ids: map[string]int{}}
}

func (st *genStyles) id(t testing.TB, name string) int {
	t.Helper()
	if id, ok := st.ids[name]; ok {
		return id
	}
	code := func(c string) *string { return &c }
	s := map[string]excelize.Style{
		"date":       {NumFmt: 14},
		"datetime":   {NumFmt: 22},
		"norwegian":  {CustomNumFmt: code("dd.mm.yyyy")},
		"time":       {NumFmt: 20},
		"elapsed":    {CustomNumFmt: code("[h]:mm")},
		"postcode":   {CustomNumFmt: code("0000")},
		"money":      {NumFmt: 4},
		"percent":    {NumFmt: 10},
		"text":       {NumFmt: 49},
		"customText": {CustomNumFmt: code("@")},
		"integer":    {NumFmt: 1},
		"italic":     {Font: &excelize.Font{Italic: true}},
		"fill":       {Fill: excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"FFFF00"}}},
		"sections":   {CustomNumFmt: code(`0.0;[Red]-0.0;"zero";"text: "@`)},
	}[name]
	id, err := st.f.NewStyle(&s)
	require.NoError(t, err)
	st.ids[name] = id
	return id
}

// writeGenCell writes c at cell.
func writeGenCell(t testing.TB, f *excelize.File, st *genStyles, cell string, c genCell) {
	t.Helper()
	const s = "Sheet1"
	styled := func(name string) {
		require.NoError(t, f.SetCellStyle(s, cell, cell, st.id(t, name)))
	}
	if c.i < 0 {
		c.i = -(c.i + 1)
	}
	var err error
	switch c.kind % genKinds {
	case 0: // a shared string
		err = f.SetCellStr(s, cell, c.text)
	case 1: // an inline string
		if c.text == "" {
			c.text = "x"
		}
		if _, err := strconv.ParseFloat(c.text, 64); err == nil {
			c.text += "!" // a number would be written as one
		}
		err = f.SetCellDefault(s, cell, c.text)
	case 2: // rich text
		err = f.SetCellRichText(s, cell, []excelize.RichTextRun{{Text: c.text}, {Text: "·" + c.text, Font: &excelize.Font{Bold: true}}})
	case 3:
		err = f.SetCellInt(s, cell, c.i)
	case 4:
		err = f.SetCellFloat(s, cell, c.num, -1, 64)
	case 5: // digits as written, possibly more than 15
		err = f.SetCellDefault(s, cell, strconv.FormatInt(c.i, 10)+strconv.FormatInt(c.i%1000, 10))
	case 6:
		err = f.SetCellBool(s, cell, c.i%2 == 0)
	case 7, 8, 9, 10, 11: // a serial number as a date, date and time, time, duration
		err = f.SetCellFloat(s, cell, float64(c.i%80000)+c.num-float64(int64(c.num)), -1, 64)
		styled([]string{"date", "datetime", "norwegian", "time", "elapsed"}[c.kind%genKinds-7])
	case 12:
		err = f.SetCellInt(s, cell, c.i%10000)
		styled("postcode")
	case 13:
		err = f.SetCellFloat(s, cell, c.num, -1, 64)
		styled("money")
	case 14:
		err = f.SetCellFloat(s, cell, c.num, -1, 64)
		styled("percent")
	case 15: // text in the Text format, shared or inline
		if c.i&1 == 0 {
			err = f.SetCellStr(s, cell, c.text)
		} else {
			if _, err := strconv.ParseFloat(c.text, 64); err == nil || c.text == "" {
				c.text += "!"
			}
			err = f.SetCellDefault(s, cell, c.text)
		}
		styled([]string{"text", "customText"}[c.i>>1&1])
	case 16: // text in a number style
		err = f.SetCellStr(s, cell, c.text)
		styled([]string{"postcode", "date", "money", "sections"}[c.i&3])
	case 17:
		err = f.SetCellFormula(s, cell, "1+1")
	case 18:
		styled("fill") // formatted, no value
	case 19:
		err = f.SetCellFloat(s, cell, c.num, -1, 64)
		styled([]string{"italic", "integer", "sections"}[c.i%3])
	case 20:
		err = f.SetCellValue(s, cell, time.Date(1900+int(c.i%200), time.Month(1+c.i%12), 1+int(c.i%28), int(c.i%24), int(c.i%60), 0, 0, time.UTC))
	}
	require.NoError(t, err)
}

// writeGenWorkbook writes rows of generated cells under a header row.
func writeGenWorkbook(t testing.TB, path string, rows [][]genCell) {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	st := newGenStyles(f)
	header := make([]any, genColumns)
	for i := range header {
		header[i] = "col" + strconv.Itoa(i+1)
	}
	require.NoError(t, f.SetSheetRow("Sheet1", "A1", &header))
	for r, row := range rows {
		for c, cell := range row {
			name, err := excelize.CoordinatesToCellName(c%genColumns+1, r+2)
			require.NoError(t, err)
			writeGenCell(t, f, st, name, cell)
		}
	}
	require.NoError(t, f.SaveAs(path))
}

// excelizeRecords reads path with excelize's row iterator as the reader did before it
// streamed worksheets: dataFormats applied, dates turned into ISO text, blank rows skipped,
// the header row left out.
func excelizeRecords(t testing.TB, path string) []Record {
	t.Helper()
	f, err := excelize.OpenFile(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, dataFormats(f))
	date1904 := f.WorkBook != nil && f.WorkBook.WorkbookPr != nil && f.WorkBook.WorkbookPr.Date1904
	rows, err := f.Rows("Sheet1")
	require.NoError(t, err)
	defer rows.Close()
	var out []Record
	for line := 1; rows.Next(); line++ {
		cells, err := rows.Columns()
		require.NoError(t, err)
		if line == 1 || allBlank(cells) {
			continue
		}
		values := make([]string, genColumns)
		for i, v := range cells {
			if iso, ok := isoDate(v, date1904); ok {
				v = iso
			}
			if i < genColumns {
				values[i] = v
			} else {
				require.Empty(t, strings.TrimSpace(v))
			}
		}
		out = append(out, Record{Line: line, Values: values})
	}
	require.NoError(t, rows.Error())
	return out
}

// streamRecords reads path with the XLSX reader.
func streamRecords(t testing.TB, path string) []Record {
	t.Helper()
	r, err := OpenXLSX(context.Background(), path, XLSXOptions{HeaderRow: 1, TempDir: filepath.Dir(path)})
	require.NoError(t, err)
	defer r.Close()
	var out []Record
	for {
		rec, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, Record{Line: rec.Line, Values: rec.Values})
	}
}

func requireSameCells(t testing.TB, path string) {
	t.Helper()
	want := excelizeRecords(t, path)
	got := streamRecords(t, path)
	require.Equal(t, len(want), len(got), "rows")
	for i := range want {
		require.Equal(t, want[i].Line, got[i].Line)
		for c := range want[i].Values {
			require.Equal(t, want[i].Values[c], got[i].Values[c], "row %d column %d: %q", want[i].Line, c+1, got[i].Values)
		}
	}
}

var genTexts = []string{
	"", " ", "Ola Nordmann", "  spaces  ", "æøå ÆØÅ", "a<b&c>d \"q\" 'a'", "line\r\nbreak\nand\rcr",
	"_x0041_", "_x005F_x0041_", "tab\there", "\x01\x08control", "0150", "4790000000", "1e5", "TRUE",
	"😀 emoji", "=SUM(A1)", "]]>", "&amp;", "-0", "007",
}

func genRandomCell(rng *rand.Rand) genCell {
	c := genCell{kind: rng.IntN(genKinds), text: genTexts[rng.IntN(len(genTexts))], i: rng.Int64N(1 << 50)}
	switch rng.IntN(4) {
	case 0:
		c.num = float64(rng.IntN(100000)) / 100
	case 1:
		c.num = -rng.Float64() * 1e6
	case 2:
		c.num = rng.NormFloat64() * 1e15
	default:
		c.num = rng.Float64()
	}
	if rng.IntN(3) == 0 {
		c.text += strconv.Itoa(rng.IntN(1000))
	}
	return c
}

func TestXLSXStreamMatchesExcelize(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var rows [][]genCell
	for r := range 400 {
		var row []genCell
		for c := range genColumns {
			if rng.IntN(8) == 0 {
				continue // a gap
			}
			cell := genRandomCell(rng)
			if r*genColumns+c < 2*genKinds {
				cell.kind = (r*genColumns + c) % genKinds // every kind, early
			}
			row = append(row, cell)
		}
		if r%37 == 5 {
			row = nil // a blank row
		}
		rows = append(rows, row)
	}
	path := filepath.Join(t.TempDir(), "generated.xlsx")
	writeGenWorkbook(t, path, rows)
	requireSameCells(t, path)
}

// FuzzXLSXStreamMatchesExcelize writes a small workbook from the fuzzer's bytes (a few
// cells, each a kind, a text and a number) and compares the readers.
func FuzzXLSXStreamMatchesExcelize(f *testing.F) {
	f.Add([]byte("\x00\x07\x0c\x10\x14"), "Ola", int64(4790000000), 1234.5)
	f.Add([]byte("\x05\x06\x0d\x11\x13"), "_x0041_<&>", int64(-15), -0.001)
	f.Add([]byte{1, 2, 3, 4, 8, 9, 10, 11, 15, 16, 17, 18, 19, 20}, "0150", int64(1<<52), 1e20)
	dir := f.TempDir()
	n := 0
	f.Fuzz(func(t *testing.T, kinds []byte, text string, i int64, num float64) {
		if len(kinds) > 3*genColumns {
			kinds = kinds[:3*genColumns]
		}
		text = strings.ToValidUTF8(text, "?")
		if len(text) > 100 {
			text = text[:100]
		}
		var rows [][]genCell
		for j, k := range kinds {
			if j%genColumns == 0 {
				rows = append(rows, nil)
			}
			c := genCell{kind: int(k), text: fmt.Sprintf("%s%d", text, j), i: i + int64(j), num: num * float64(j+1)}
			rows[len(rows)-1] = append(rows[len(rows)-1], c)
		}
		n++
		path := filepath.Join(dir, fmt.Sprintf("fuzz-%d.xlsx", n))
		defer os.Remove(path)
		writeGenWorkbook(t, path, rows)
		requireSameCells(t, path)
	})
}
