package sources

import (
	"archive/zip"
	"encoding/xml"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"
)

// sheetParts maps lower-case sheet names to the lower-case names of their worksheet parts,
// read from the workbook and its relationships. It returns what it can; an unreadable
// workbook is reported by excelize.
func sheetParts(zr *zip.Reader) map[string]string {
	var wb struct {
		Sheets []struct {
			Name string `xml:"name,attr"`
			RID  string `xml:"http://schemas.openxmlformats.org/officeDocument/2006/relationships id,attr"`
		} `xml:"sheets>sheet"`
	}
	var rels struct {
		Rels []struct {
			ID     string `xml:"Id,attr"`
			Target string `xml:"Target,attr"`
		} `xml:"Relationship"`
	}
	if decodePart(zr, "xl/workbook.xml", &wb) != nil || decodePart(zr, "xl/_rels/workbook.xml.rels", &rels) != nil {
		return nil
	}
	targets := map[string]string{}
	for _, r := range rels.Rels {
		t := r.Target
		if strings.HasPrefix(t, "/") {
			t = strings.TrimPrefix(t, "/")
		} else {
			t = path.Join("xl", t)
		}
		targets[r.ID] = strings.ToLower(t)
	}
	parts := map[string]string{}
	for _, s := range wb.Sheets {
		parts[strings.ToLower(s.Name)] = targets[s.RID]
	}
	return parts
}

// decodePart unmarshals a small XML part of the archive, one of excelizeParts, which
// checkParts bounded (at most maxPartSize is read).
func decodePart(zr *zip.Reader, name string, v any) error {
	for _, f := range zr.File {
		if !strings.EqualFold(f.Name, name) {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		return xml.NewDecoder(io.LimitReader(rc, maxPartSize)).Decode(v)
	}
	return io.ErrUnexpectedEOF
}

// Kinds of number format, for turning dates into ISO text.
type numFmtKind int

const (
	fmtOther numFmtKind = iota
	fmtDate
	fmtDateTime
	fmtTime
)

// Date cells: excelize formats a date slowly (about a quarter of a millisecond a cell, in
// its locale tables), so date styles get a number format instead that shows the serial
// number behind a marker, and the reader turns it into ISO text itself. The marker starts
// with NUL, which XML text cannot hold, so no cell value starts with it by chance.
const dateMarker = "\x00"

// dateFormats are the number formats date styles get: the marker, the kind, the serial.
var dateFormats = map[numFmtKind]string{
	fmtDate:     `"` + dateMarker + `d"0.000000000`,
	fmtDateTime: `"` + dateMarker + `T"0.000000000`,
	fmtTime:     `"` + dateMarker + `t"0.000000000`,
}

// isoDate turns a value formatted with one of dateFormats into ISO text; ok is false for
// any other value.
func isoDate(v string, date1904 bool) (string, bool) {
	if len(v) < 3 || v[0] != 0 {
		return "", false
	}
	serial, err := strconv.ParseFloat(v[2:], 64)
	if err != nil {
		return "", false
	}
	t, err := excelize.ExcelDateToTime(serial, date1904)
	if err != nil {
		return "", false
	}
	t = t.Round(time.Second)
	switch v[1] {
	case 'd':
		return t.Format(time.DateOnly), true
	case 't':
		return t.Format(time.TimeOnly), true
	}
	return t.Format("2006-01-02T15:04:05"), true
}

// builtinNumFmtKind classifies Excel's built-in number formats (ECMA-376 18.8.30). The
// locale-dependent East Asian formats (27-36, 50-81) are left as excelize shows them.
func builtinNumFmtKind(id int) numFmtKind {
	switch {
	case id >= 14 && id <= 17:
		return fmtDate
	case id >= 18 && id <= 21, id == 45, id == 47:
		return fmtTime
	case id == 22:
		return fmtDateTime
	}
	return fmtOther
}

// classifyNumFmt classifies a custom number format code by its first section: one with
// year or day codes is a date (with hour or second codes too, a date and time); one with
// hour or second codes only is a time; a lone month code is a date. Quoted text, escaped
// and padding characters and bracketed parts ([Red], [$-414]) do not count; an elapsed-time
// format ([h]:mm) is a duration, left alone.
func classifyNumFmt(code string) numFmtKind {
	var date, clock, month bool
	for i := 0; i < len(code); i++ {
		switch c := code[i]; c {
		case ';':
			i = len(code)
		case '"':
			if j := strings.IndexByte(code[i+1:], '"'); j >= 0 {
				i += j + 1
			} else {
				i = len(code)
			}
		case '\\', '_', '*':
			i++
		case '[':
			j := strings.IndexByte(code[i:], ']')
			if j < 0 {
				i = len(code)
				break
			}
			if inner := code[i+1 : i+j]; inner != "" && strings.Trim(strings.ToLower(inner), "hms") == "" {
				return fmtOther // [h], [mm], [ss]: elapsed time
			}
			i += j
		case 'y', 'Y', 'd', 'D':
			date = true
		case 'h', 'H', 's', 'S':
			clock = true
		case 'm', 'M':
			month = true
		}
	}
	switch {
	case date && clock:
		return fmtDateTime
	case date:
		return fmtDate
	case clock:
		return fmtTime
	case month:
		return fmtDate
	}
	return fmtOther
}

// dataFormats makes every cell style with a date or time format show its serial number
// behind a marker (see dateFormats), and every style with the General format show numbers
// with all their digits: it adds one style per date format and points the styles' number
// formats elsewhere. Nothing is written back to the file.
func dataFormats(f *excelize.File) error {
	if f.Styles == nil || f.Styles.CellXfs == nil {
		return nil
	}
	custom := map[int]string{}
	if f.Styles.NumFmts != nil {
		for _, nf := range f.Styles.NumFmts.NumFmt {
			if nf != nil {
				custom[nf.NumFmtID] = nf.FormatCode
			}
		}
	}
	kinds := make([]numFmtKind, len(f.Styles.CellXfs.Xf))
	for i, xf := range f.Styles.CellXfs.Xf {
		if xf.NumFmtID == nil {
			continue
		}
		if code, ok := custom[*xf.NumFmtID]; ok {
			kinds[i] = classifyNumFmt(code)
		} else {
			kinds[i] = builtinNumFmtKind(*xf.NumFmtID)
		}
	}
	ids := map[numFmtKind]int{}
	for kind, code := range dateFormats {
		style, err := f.NewStyle(&excelize.Style{CustomNumFmt: &code})
		if err != nil {
			return err
		}
		ids[kind] = *f.Styles.CellXfs.Xf[style].NumFmtID
	}
	for i, kind := range kinds {
		xf := &f.Styles.CellXfs.Xf[i]
		switch {
		case kind != fmtOther:
			id := ids[kind]
			xf.NumFmtID = &id
		case xf.NumFmtID == nil || *xf.NumFmtID == 0:
			// General: excelize shows it as Excel does, with 11 significant digits at
			// most (4.477009001E+11). A number format id excelize does not know makes it
			// return the cell's value as written, which for a number is all its digits.
			id := noNumFmt
			xf.NumFmtID = &id
		}
	}
	return nil
}

// noNumFmt is a number format id that is neither built in nor defined: excelize returns
// the value of a cell styled with it unformatted.
const noNumFmt = -1

// sharedStringsPart returns the lower-case name of the workbook's shared-string part, ""
// when it has none.
func sharedStringsPart(zr *zip.Reader) string {
	var rels struct {
		Rels []struct {
			Type   string `xml:"Type,attr"`
			Target string `xml:"Target,attr"`
		} `xml:"Relationship"`
	}
	if decodePart(zr, "xl/_rels/workbook.xml.rels", &rels) != nil {
		return ""
	}
	for _, r := range rels.Rels {
		if strings.HasSuffix(r.Type, "/sharedStrings") {
			if strings.HasPrefix(r.Target, "/") {
				return strings.ToLower(strings.TrimPrefix(r.Target, "/"))
			}
			return strings.ToLower(path.Join("xl", r.Target))
		}
	}
	return ""
}
