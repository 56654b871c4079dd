package sources

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// TestSheetScannerCellAcrossReads reads a worksheet whose bytes arrive one at a time, so the
// scanner's buffer is compacted while a cell is being read: every cell keeps its type and
// value. (A workbook of a million rows lost the type of a cell whose end came after a
// compaction: its inline string read as empty, and its row was rejected for a missing
// e-mail.)
func TestSheetScannerCellAcrossReads(t *testing.T) {
	t.Parallel()

	const rows = 3000
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` +
		`<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
	for r := 1; r <= rows; r++ {
		fmt.Fprintf(&b, `<row r="%d"><c r="A%d" t="inlineStr"><is><t>kontakt%d@example.com</t></is></c>`+
			`<c r="B%d" s="0" t="s"><v>%d</v></c><c r="C%d"><v>%d</v></c></row>`, r, r, r, r, r%7, r, r*3)
	}
	b.WriteString(`</sheetData></worksheet>`)

	for _, r := range []io.Reader{strings.NewReader(b.String()), iotest.HalfReader(strings.NewReader(b.String())), iotest.OneByteReader(strings.NewReader(b.String()))} {
		s := &sheetScanner{x: newXMLScanner(r, 1<<20)}
		row := 0
		for {
			tok, err := s.next()
			require.NoError(t, err)
			if tok == tokEOF {
				break
			}
			switch tok {
			case tokRow:
				row = s.row
			case tokCell:
				c := &s.cell
				switch c.col {
				case 1:
					require.Equal(t, "inlineStr", string(c.typ), "row %d", row)
					require.Equal(t, fmt.Sprintf("kontakt%d@example.com", row), string(c.is), "row %d", row)
				case 2:
					require.Equal(t, "s", string(c.typ), "row %d", row)
					require.Equal(t, "0", string(c.style), "row %d", row)
					require.Equal(t, fmt.Sprint(row%7), string(c.v), "row %d", row)
				case 3:
					require.Empty(t, c.typ, "row %d", row)
					require.Equal(t, fmt.Sprint(row*3), string(c.v), "row %d", row)
				}
			}
		}
		require.Equal(t, rows, row)
	}
}
