package sources

import (
	"context"
	"fmt"
	"github.com/subsync/subsync/internal/secret"
	"log/slog"
	"path/filepath"
	"strings"
)

// Kinds of source, as Config.Kind names them.
const (
	KindCSV  = "csv"
	KindXLSX = "xlsx"
	KindSQL  = "sql"
)

// Config describes one source, as a config file's source block does. Fields that do not
// apply to the kind are ignored.
type Config struct {
	// Kind is "csv", "xlsx" or "sql"; "" picks csv or xlsx from Path (see KindOf).
	Kind string
	// Path is the file of a csv or xlsx source.
	Path string
	// Encoding and Delimiter override what a CSV reader detects; "" = detect
	// (see CSVOptions).
	Encoding, Delimiter string
	// StrayLines is what becomes of values that are not UTF-8 in a CSV file read as UTF-8:
	// "" or StrayDecode, or StrayReject (see CSVOptions).
	StrayLines string
	// Sheet and SheetIndex choose the worksheet of an xlsx source (see XLSXOptions).
	Sheet      string
	SheetIndex int
	// HeaderRow is the 1-based row (CSV: line) holding the column names; 0 = the first
	// non-empty one.
	HeaderRow int
	// IsHeader, for an xlsx source without Sheet, SheetIndex and HeaderRow, finds the
	// worksheet and header row (see XLSXOptions.IsHeader).
	IsHeader func(cells []string) bool `json:"-"`
	// Driver, DSN, Query, WatermarkColumn, Watermark, Stable and OrderBy describe a sql source
	// (see SQLOptions). The DSN is a secret: String and LogValue redact it.
	Driver          string
	DSN             string
	Query           string
	WatermarkColumn string
	Watermark       string
	Stable          bool
	OrderBy         string
}

// String describes the source with the DSN's password redacted.
func (c Config) String() string {
	switch kind := c.Kind; {
	case kind == KindSQL:
		return fmt.Sprintf("sql source (driver %s, dsn %s)", c.Driver, secret.DSN(c.Driver, c.DSN))
	case kind != "":
		return fmt.Sprintf("%s source %s", kind, c.Path)
	}
	return "source " + c.Path
}

// LogValue logs the source without its secrets.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("kind", c.Kind)}
	if c.Path != "" {
		attrs = append(attrs, slog.String("path", c.Path))
	}
	if c.Driver != "" {
		attrs = append(attrs, slog.String("driver", c.Driver), slog.String("dsn", secret.DSN(c.Driver, c.DSN)))
	}
	return slog.GroupValue(attrs...)
}

// Open opens the source cfg describes. With Kind empty, the kind comes from the file name
// and is checked against the file's content: see KindOf.
func Open(ctx context.Context, cfg Config) (Reader, error) {
	kind := cfg.Kind
	if kind == "" {
		var err error
		if kind, err = KindOf(cfg.Path); err != nil {
			return nil, err
		}
	}
	switch kind {
	case KindCSV:
		return OpenCSV(ctx, cfg.Path, CSVOptions{Encoding: cfg.Encoding, Delimiter: cfg.Delimiter, HeaderRow: cfg.HeaderRow, StrayLines: cfg.StrayLines})
	case KindXLSX:
		return OpenXLSX(ctx, cfg.Path, XLSXOptions{Sheet: cfg.Sheet, SheetIndex: cfg.SheetIndex, HeaderRow: cfg.HeaderRow, IsHeader: cfg.IsHeader})
	case KindSQL:
		return OpenSQL(ctx, SQLOptions{Driver: cfg.Driver, DSN: cfg.DSN, Query: cfg.Query, WatermarkColumn: cfg.WatermarkColumn, Watermark: cfg.Watermark, Stable: cfg.Stable, OrderBy: cfg.OrderBy})
	}
	return nil, fmt.Errorf("source kind %q: want csv, xlsx or sql", kind)
}

// KindOf tells the kind of a file from its name, checked against its first bytes:
//
//   - .csv, .tsv, .txt, .tab: csv; the content must be text;
//   - .xlsx, .xlsm, .xltx, .xltm: xlsx; the content must be a zip archive, or an OLE file
//     (an encrypted workbook or a renamed .xls, which OpenXLSX explains);
//   - .xls: ErrLegacyXLS from OpenXLSX for a real one; ErrContentMismatch for anything else;
//   - any other name: the content decides (a zip archive is xlsx, text is csv).
//
// A mismatch (a workbook named .csv, text named .xlsx) is ErrContentMismatch, with a
// message saying what the file is.
func KindOf(path string) (string, error) {
	head, err := readHead(path, 512)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	got, what := sniffContent(head)
	ext := strings.ToLower(filepath.Ext(path))
	mismatch := func(named string) error {
		return fmt.Errorf("open %s: %w: it is named as %s but it is %s (rename it or set the source kind)", path, ErrContentMismatch, named, what)
	}
	switch ext {
	case ".csv", ".tsv", ".txt", ".tab":
		if got == contentZip {
			return "", mismatch("a CSV file")
		}
		return KindCSV, nil // OpenCSV explains OLE and binary content
	case ".xlsx", ".xlsm", ".xltx", ".xltm":
		if got == contentText && len(head) > 0 {
			return "", mismatch("an Excel workbook")
		}
		return KindXLSX, nil // OpenXLSX explains the rest
	case ".xls":
		if got == contentZip {
			return "", mismatch("an Excel 97-2003 workbook (.xls)")
		}
		if got == contentOLE {
			return KindXLSX, nil // OpenXLSX tells an .xls from an encrypted workbook
		}
		return "", mismatch("an Excel 97-2003 workbook (.xls)")
	}
	switch got {
	case contentZip, contentOLE:
		return KindXLSX, nil
	case contentText:
		return KindCSV, nil
	}
	return "", fmt.Errorf("open %s: %w: the file is %s, neither CSV text nor an .xlsx workbook", path, ErrContentMismatch, what)
}
