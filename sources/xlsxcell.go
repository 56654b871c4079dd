package sources

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"
)

// cellFormatter turns a worksheet cell into the text excelize's row iterator gives for it
// (after dataFormats), so the streaming reader and excelize never disagree on a value.
//
// The common cells are done here, by the rules excelize follows (cell.go getValueFrom): a
// cell whose style shows values as written (no style, or General, which dataFormats turns
// into "as written"): a shared string, an inline string, a boolean, a plain or computed
// string, a number with all its digits. Any other cell (a number format such as 0000 or
// #,##0.00, a date style, an ISO date cell) is handed to excelize itself: the cell's own XML
// is put in a one-cell scratch worksheet of the same workbook, read back with excelize's row
// iterator, and the text remembered for the next cell with the same type, style and content
// (a postcode column has at most 10,000 of them, a birthday column some 30,000).
type cellFormatter struct {
	file    *excelize.File
	sheet   string // the scratch worksheet
	part    string // its part name
	asIs    []bool // by style index: the style shows a value as written
	text    []bool // by style index: the Text format (@), which shows a string as written
	sst     *sharedStrings
	cache   map[string]string
	key     []byte
	doc     []byte
	scratch []byte
}

// maxFormatCache bounds the remembered texts; the cache starts over when it is full.
const maxFormatCache = 1 << 16

func newCellFormatter(f *excelize.File, sst *sharedStrings) (*cellFormatter, error) {
	cf := &cellFormatter{file: f, sst: sst, cache: map[string]string{}, sheet: "subsync scratch"}
	if f.Styles != nil && f.Styles.CellXfs != nil {
		custom := map[int]string{}
		if f.Styles.NumFmts != nil {
			for _, nf := range f.Styles.NumFmts.NumFmt {
				if nf != nil {
					custom[nf.NumFmtID] = cmp.Or(nf.FormatCode16, nf.FormatCode)
				}
			}
		}
		n := len(f.Styles.CellXfs.Xf)
		cf.asIs, cf.text = make([]bool, n), make([]bool, n)
		for i, xf := range f.Styles.CellXfs.Xf {
			if xf.NumFmtID == nil {
				continue
			}
			id := *xf.NumFmtID
			cf.asIs[i] = id == noNumFmt
			code, ok := custom[id]
			cf.text[i] = ok && code == "@" || !ok && id == 49
		}
	}
	for _, name := range f.GetSheetList() {
		if strings.EqualFold(name, cf.sheet) {
			cf.sheet += " 2"
		}
	}
	if _, err := f.NewSheet(cf.sheet); err != nil {
		return nil, fmt.Errorf("scratch worksheet: %w", err)
	}
	// The new worksheet is the only one excelize has parsed (the workbook's own worksheets
	// are not given to it): forget it, so its part is read from the package each time.
	f.Sheet.Range(func(k, _ any) bool {
		cf.part = k.(string)
		return true
	})
	if cf.part == "" {
		return nil, fmt.Errorf("scratch worksheet: no part")
	}
	f.Sheet.Delete(cf.part)
	return cf, nil
}

// appendValue appends the text of cell c to dst.
func (cf *cellFormatter) appendValue(dst []byte, c *sheetCell) ([]byte, error) {
	asIs, text := true, false
	if c.style != nil {
		n, ok := parseIndex(c.style)
		switch {
		case !ok:
			return cf.appendFormatted(dst, c)
		case n > 0 && n < len(cf.asIs):
			asIs, text = cf.asIs[n], cf.text[n]
		}
	}
	switch string(c.typ) {
	case "str":
		return append(dst, c.v...), nil
	case "b":
		switch string(c.v) {
		case "1":
			return append(dst, "TRUE"...), nil
		case "0":
			return append(dst, "FALSE"...), nil
		}
		if asIs {
			return append(dst, c.v...), nil
		}
	case "s":
		if asIs || text {
			if len(c.v) == 0 {
				return dst, nil
			}
			i, err := strconv.Atoi(string(bytes.TrimSpace(c.v)))
			if err != nil {
				i = 0 // as excelize reads it
			}
			if i < 0 || i >= cf.sst.len() {
				return append(dst, c.v...), nil
			}
			return append(dst, cf.sst.at(i)...), nil
		}
	case "inlineStr":
		if asIs || text {
			if c.hasIS {
				return appendBstr(dst, c.is), nil
			}
			return append(dst, c.v...), nil
		}
	case "d":
	default:
		if asIs {
			return appendGeneral(dst, c.v), nil
		}
	}
	return cf.appendFormatted(dst, c)
}

// parseIndex reads a style index written in decimal digits.
func parseIndex(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// appendGeneral appends a number cell's value as excelize shows it in a style that shows
// values as written: up to 15 significant digits in full, more in 'G' notation with 15.
// Text that is not a number is appended as it is.
func appendGeneral(dst, v []byte) []byte {
	if plainInteger(v) {
		return append(dst, v...)
	}
	if len(v) == 0 || bytes.IndexByte(v, '_') >= 0 {
		return append(dst, v...)
	}
	var d big.Float
	if _, ok := d.SetString(string(v)); !ok {
		return append(dst, v...)
	}
	flt, _ := d.Float64()
	s := strconv.FormatFloat(flt, 'f', -1, 64)
	if len(s)-strings.Count(s, ".") > 15 {
		return strconv.AppendFloat(dst, flt, 'G', 15, 64)
	}
	return append(dst, s...)
}

// plainInteger reports whether v is an integer excelize shows unchanged: "0", or up to 15
// characters of digits (a minus sign counts), with no leading zero.
func plainInteger(v []byte) bool {
	if len(v) == 0 || len(v) > 15 {
		return false
	}
	d := v
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || (d[0] == '0' && len(v) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendFormatted appends the text excelize gives for cell c, from the cache or from the
// scratch worksheet.
func (cf *cellFormatter) appendFormatted(dst []byte, c *sheetCell) ([]byte, error) {
	cf.key = append(append(append(append(append(cf.key[:0], c.typ...), 0), c.style...), 0), c.inner...)
	if v, ok := cf.cache[string(cf.key)]; ok {
		return append(dst, v...), nil
	}
	doc := append(cf.doc[:0], `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c`...)
	if c.style != nil {
		doc = append(append(append(doc, ` s="`...), c.style...), '"')
	}
	switch {
	case string(c.typ) == "s":
		// excelize has no shared strings (see xlsxparts.go): the string goes in the cell,
		// which excelize formats as it formats a shared one.
		doc = append(doc, ` t="inlineStr"><is><t>`...)
		doc = appendInlineText(doc, cf.sharedText(c.v))
		doc = append(doc, `</t></is>`...)
	case c.typ != nil:
		doc = append(append(append(append(doc, ` t="`...), c.typ...), '"', '>'), c.inner...)
	default:
		doc = append(append(doc, '>'), c.inner...)
	}
	doc = append(doc, `</c></row></sheetData></worksheet>`...)
	cf.doc = doc
	cf.file.Pkg.Store(cf.part, doc)
	rows, err := cf.file.Rows(cf.sheet)
	if err != nil {
		return dst, fmt.Errorf("format cell %s: %w", columnName(c.col), err)
	}
	defer rows.Close()
	var v string
	if rows.Next() {
		cols, err := rows.Columns()
		if err != nil {
			return dst, fmt.Errorf("format cell %s: %w", columnName(c.col), err)
		}
		if len(cols) > 0 {
			v = cols[0]
		}
	}
	if len(cf.cache) >= maxFormatCache {
		clear(cf.cache)
	}
	cf.cache[string(cf.key)] = v
	return append(dst, v...), nil
}

// sharedText is the text of the shared-string cell whose value is v, as excelize gives it:
// the string at that index, or v itself when there is none.
func (cf *cellFormatter) sharedText(v []byte) string {
	if len(v) > 0 {
		i, err := strconv.Atoi(string(bytes.TrimSpace(v)))
		if err != nil {
			i = 0 // as excelize reads it
		}
		if i >= 0 && i < cf.sst.len() {
			return cf.sst.at(i)
		}
	}
	return string(v)
}

// appendInlineText appends s as the text of an inline string that excelize reads back as s:
// XML's special characters escaped, the characters XML cannot hold written as _xHHHH_, and
// the "_x" of text that reads like such an escape written as "_x005F_x".
func appendInlineText(dst []byte, s string) []byte {
	var b bytes.Buffer
	for i, r := range s {
		switch {
		case r == '_' && strings.HasPrefix(s[i:], "_x"):
			b.WriteString("_x005F_")
		case !isXMLChar(r) && r <= 0xFFFF:
			fmt.Fprintf(&b, "_x%04X_", r)
		default:
			b.WriteRune(r)
		}
	}
	var out bytes.Buffer
	_ = xml.EscapeText(&out, b.Bytes()) // a bytes.Buffer does not fail
	return append(dst, out.Bytes()...)
}
