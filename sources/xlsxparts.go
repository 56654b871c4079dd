package sources

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// excelize parses the parts of a workbook it is given whole, into memory, with encoding/xml:
// 900 MB of white space in the styles took 6 GB, and a million <xf/> elements (5 MB) take
// some 350 MB (#35). So the reader gives it only the parts it needs to name the sheets and
// format cells (excelizeParts: never the worksheets, which the reader streams itself, nor
// the shared strings, which it holds itself, nor pictures, themes, properties or anything
// else, which are never unpacked), and checks each of those before excelize sees it: it may
// unpack to at most maxPartSize bytes, hold at most maxPartElements elements, and no tag,
// comment or other markup in it may be larger than a cell may (MaxCellSize). What excelize
// then holds is claimed from the readers' memory budget (xlsxmem.go) at partCost.

// excelizeParts are the parts given to excelize (lower case).
var excelizeParts = []string{"[content_types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/styles.xml"}

// maxPartSize bounds what each of excelizeParts may unpack to. Excel's own styles for its
// 65,490 cell formats at most take about 15 MB.
const maxPartSize = 16 << 20

// maxPartElements bounds the elements of each of excelizeParts: the styles of a workbook
// with as many cell formats and named styles as Excel allows hold about 700,000.
const maxPartElements = 1 << 20

// What excelize holds for a part it parsed, measured with excelize v2.10.1 (a workbook with a
// padded or a crowded styles part, opened in a loop, peak heap): about 8 bytes for each byte
// of the part, and 360 for each element.
const (
	partByteCost    = 8
	partElementCost = 400
)

// isExcelizePart reports whether the part name is one of excelizeParts.
func isExcelizePart(name string) bool {
	name = strings.ToLower(name)
	for _, p := range excelizeParts {
		if name == p {
			return true
		}
	}
	return false
}

// checkParts checks each of excelizeParts the archive holds, as the package doc of this file
// says, and returns what excelize will hold of them in memory.
func checkParts(ctx context.Context, zr *zip.Reader, maxTag int) (int64, error) {
	var cost int64
	for _, f := range zr.File {
		if !isExcelizePart(f.Name) {
			continue
		}
		rc, err := openPart(ctx, zr, f.Name, maxPartSize)
		if err != nil {
			return 0, err
		}
		elements, err := countElements(rc, maxTag)
		_ = rc.Close()
		switch {
		case errors.Is(err, errElementTooLarge):
			return 0, fmt.Errorf("%w: %s: a tag larger than %d bytes", ErrTooLarge, f.Name, maxTag)
		case err != nil:
			return 0, err
		case elements > maxPartElements:
			return 0, fmt.Errorf("%w: %s holds more than %d elements (no spreadsheet writes so many)", ErrTooLarge, f.Name, maxPartElements)
		}
		cost += partByteCost*int64(f.UncompressedSize64) + partElementCost*int64(elements)
	}
	return cost, nil
}

// countElements counts the start tags of an XML stream, up to one past maxPartElements.
func countElements(r io.Reader, maxTag int) (int, error) {
	x := newXMLScanner(r, maxTag)
	n := 0
	for n <= maxPartElements && x.skipTo() {
		t, skip, ok := x.readTag()
		if !ok {
			break
		}
		if !skip {
			if !t.closing {
				n++
			}
			x.pos += t.n
		}
	}
	return n, x.err
}
