package sources

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/subsync/subsync/internal/check"
)

// KindFromName tells the kind of a file from its extension alone: csv for .csv, .tsv, .txt
// and .tab, xlsx for .xlsx, .xlsm, .xltx, .xltm and .xls, "" for any other name (the content
// decides when the file is opened: see KindOf).
func KindFromName(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv", ".tsv", ".txt", ".tab":
		return KindCSV
	case ".xlsx", ".xlsm", ".xltx", ".xltm", ".xls":
		return KindXLSX
	}
	return ""
}

// Validate checks a source's settings before anything is opened: every problem is a
// *check.FieldError naming the field (Path, Encoding, Driver, …). A key that does not apply
// to the kind is a problem, so that a setting never silently does nothing.
func (c Config) Validate() error {
	var p check.Problems
	only := func(field, kind string, set bool) {
		if set {
			p.Add(field, "", "only for a %s source", kind)
		}
	}
	kind := strings.ToLower(c.Kind)
	switch {
	case kind == KindCSV || kind == KindXLSX || (kind == "" && c.Path != ""):
		if c.Path == "" {
			p.Add("Path", "", "missing: the %s file to read", kind)
		}
		only("Driver", KindSQL, c.Driver != "")
		only("DSN", KindSQL, c.DSN != "")
		only("Query", KindSQL, c.Query != "")
		only("WatermarkColumn", KindSQL, c.WatermarkColumn != "")
		if kind == KindCSV {
			only("Sheet", KindXLSX, c.Sheet != "")
			only("SheetIndex", KindXLSX, c.SheetIndex != 0)
		}
		if kind == KindXLSX {
			only("Encoding", KindCSV, c.Encoding != "")
			only("Delimiter", KindCSV, c.Delimiter != "")
			only("StrayLines", KindCSV, c.StrayLines != "")
		}
		if c.StrayLines != "" && c.StrayLines != StrayDecode && c.StrayLines != StrayReject {
			p.Add("StrayLines", c.StrayLines, "want %q or %q", StrayDecode, StrayReject)
		}
		if c.Encoding != "" {
			if _, _, err := textEncoding(c.Encoding); err != nil {
				p.Add("Encoding", c.Encoding, "unknown encoding: want utf-8, windows-1252, iso-8859-15, utf-16le, utf-16be or another WHATWG label")
			}
		}
		if c.Delimiter != "" {
			if _, err := parseDelimiter(c.Delimiter); err != nil {
				p.Add("Delimiter", c.Delimiter, `want one ASCII character other than a quote or a line break, or "tab"`)
			}
		}
		if c.SheetIndex < 0 {
			p.Add("SheetIndex", strconv.Itoa(c.SheetIndex), "must not be negative")
		}
		if c.HeaderRow < 0 {
			p.Add("HeaderRow", strconv.Itoa(c.HeaderRow), "must not be negative (0 = the first non-empty row)")
		}
	case kind == KindSQL:
		CheckDriver(&p, "Driver", c.Driver)
		if c.DSN == "" {
			p.Add("DSN", "", "missing")
		}
		if strings.TrimSpace(c.Query) == "" {
			p.Add("Query", "", "missing: the SELECT that reads the contacts")
		} else if err := CheckReadQuery(c.Driver, c.Query); err != nil {
			p.Add("Query", c.Query, "%v", err)
		}
		only("Path", "csv or xlsx", c.Path != "")
		only("Encoding", KindCSV, c.Encoding != "")
		only("StrayLines", KindCSV, c.StrayLines != "")
		only("Delimiter", KindCSV, c.Delimiter != "")
		only("Sheet", KindXLSX, c.Sheet != "")
		only("HeaderRow", "csv or xlsx", c.HeaderRow != 0)
	case kind == "":
		p.Add("Path", "", `missing: the file to read (or kind = "sql" with driver, dsn and query)`)
	default:
		p.Add("Kind", c.Kind, "want csv, xlsx or sql")
	}
	return p.Err()
}
