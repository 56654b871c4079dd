package sources

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/xuri/excelize/v2"
)

// DefaultMaxUnzipSize bounds what a workbook may unpack to (all its parts together). A
// million-row contact sheet unpacks to about 0.5 GB; a zip bomb to far more.
const DefaultMaxUnzipSize = 2 << 30

// maxZipEntries bounds the number of parts of a workbook.
const maxZipEntries = 10000

// xmlInMemory is the size above which excelize writes a worksheet or the shared-string
// table to a temporary file instead of keeping it in memory.
const xmlInMemory = 1 << 20

// XLSXOptions chooses the worksheet and the header row of a workbook.
type XLSXOptions struct {
	// Sheet names the worksheet (compared case-insensitively, as Excel does).
	Sheet string
	// SheetIndex picks the worksheet by its 0-based position in the workbook's tab order
	// (hidden sheets count) when Sheet is empty. With both unset, the first visible
	// worksheet is read.
	SheetIndex int
	// HeaderRow is the 1-based row holding the column names; rows above it (a title) are
	// skipped. 0 = the first non-empty row.
	HeaderRow int
	// MaxUnzipSize bounds what the workbook may unpack to. 0 = DefaultMaxUnzipSize.
	MaxUnzipSize int64
	// TempDir is where large worksheets are unpacked while they are read (removed on
	// Close). "" = os.TempDir().
	TempDir string
}

// XLSXReader streams one worksheet of an Excel workbook (.xlsx, .xlsm). It implements
// [Reader]. Record.Line is the worksheet row number and Record.Sheet the sheet's name.
//
// Cells are returned as Excel displays them (a postcode stored as the number 150 with the
// format 0000 reads "0150"; 1234.5 formatted #,##0.00 reads "1,234.50"), with two
// exceptions that make the values usable as data: a cell formatted as a date becomes an
// ISO date ("2024-01-31"), a date and time "2024-01-31T13:45:00", a time "13:45:00"
// (elapsed-time formats such as [h]:mm stay as shown); and a number in the General format
// keeps all its digits (4790000000, 447700900123: never 4.477E+11).
//
// Memory stays flat whatever the size: the file is read from disk, not loaded (see
// xlsxzip.go), a large worksheet is unpacked to a temporary file and streamed from there
// with excelize's row iterator. The one cost that grows with the data is a large
// shared-string table (Excel keeps text cells there): excelize writes it to a temporary
// file too, but keeps an index of about 40 bytes per distinct string.
//
// Opening fails with a clear error for an encrypted workbook (ErrEncryptedWorkbook), an
// Excel 97-2003 .xls (ErrLegacyXLS), a file that is not a workbook (ErrContentMismatch), a
// truncated or corrupt file, and one that would unpack to more than MaxUnzipSize
// (ErrTooLarge).
type XLSXReader struct {
	path     string
	tmpDir   string
	file     *excelize.File
	rows     *excelize.Rows
	sheet    string
	header   []string
	row      int  // the worksheet row the iterator is on
	date1904 bool // serial numbers count days from 1904, not 1900

	totalRows int64
	read      atomic.Int64
	ordinal   int64
	err       error
	closed    bool
}

// OpenXLSX opens a workbook, picks the worksheet and reads its header row.
func OpenXLSX(ctx context.Context, path string, opts XLSXOptions) (*XLSXReader, error) {
	r, err := openXLSX(ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("open xlsx %s: %w", path, err)
	}
	return r, nil
}

func openXLSX(ctx context.Context, path string, opts XLSXOptions) (_ *XLSXReader, err error) {
	if opts.HeaderRow < 0 || opts.SheetIndex < 0 || opts.MaxUnzipSize < 0 {
		return nil, fmt.Errorf("header_row %d, sheet_index %d, max unzip size %d: must not be negative", opts.HeaderRow, opts.SheetIndex, opts.MaxUnzipSize)
	}
	maxUnzip := opts.MaxUnzipSize
	if maxUnzip == 0 {
		maxUnzip = DefaultMaxUnzipSize
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // excelize has what it needs once it is open
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, errors.New("is a directory")
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	switch kind, what := sniffContent(head[:n]); kind {
	case contentOLE:
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		encrypted, err := oleEncrypted(ctx, f)
		if err != nil {
			return nil, err
		}
		if encrypted {
			return nil, ErrEncryptedWorkbook
		}
		return nil, ErrLegacyXLS
	case contentText:
		if n == 0 {
			return nil, fmt.Errorf("%w: the file is empty, not an .xlsx workbook", ErrContentMismatch)
		}
		return nil, fmt.Errorf("%w: the file is text (a CSV file?), not an .xlsx workbook", ErrContentMismatch)
	case contentBinary:
		return nil, fmt.Errorf("%w: the file is %s, not an .xlsx workbook", ErrContentMismatch, what)
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("not a readable workbook (truncated or corrupt?): %w", err)
	}
	if err := checkWorkbookArchive(zr, maxUnzip); err != nil {
		return nil, err
	}

	r := &XLSXReader{path: path}
	if r.tmpDir, err = os.MkdirTemp(opts.TempDir, "subsync-xlsx-"); err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = r.Close()
		}
	}()
	proxy, err := newProxyArchive(ctx, zr)
	if err != nil {
		return nil, err
	}
	r.file, err = excelize.OpenReader(bytes.NewReader(proxy.data), excelize.Options{
		UnzipSizeLimit:    maxUnzip,
		UnzipXMLSizeLimit: xmlInMemory,
		TmpDir:            r.tmpDir,
	})
	proxy.release()
	if perr := proxy.err(); perr != nil {
		return nil, perr
	}
	if err != nil {
		if strings.Contains(err.Error(), "unzip size exceeds") {
			return nil, fmt.Errorf("%w (%d bytes): %w", ErrTooLarge, maxUnzip, err)
		}
		return nil, fmt.Errorf("read workbook: %w", err)
	}
	if err := dataFormats(r.file); err != nil {
		return nil, err
	}
	if wb := r.file.WorkBook; wb != nil && wb.WorkbookPr != nil {
		r.date1904 = wb.WorkbookPr.Date1904
	}
	if r.sheet, err = chooseSheet(r.file, opts); err != nil {
		return nil, err
	}
	if r.rows, err = r.file.Rows(r.sheet); err != nil {
		return nil, fmt.Errorf("sheet %q: %w", r.sheet, err)
	}
	if err := r.readHeader(ctx, opts.HeaderRow); err != nil {
		return nil, err
	}
	if last := dimensionLastRow(proxy, sheetParts(zr)[strings.ToLower(r.sheet)]); last > r.row {
		r.totalRows = int64(last - r.row)
	}
	return r, nil
}

// checkWorkbookArchive tells an .xlsx from other zip files and refuses zip bombs that
// declare their size honestly (one that lies fails while it is unpacked).
func checkWorkbookArchive(zr *zip.Reader, maxUnzip int64) error {
	if len(zr.File) > maxZipEntries {
		return fmt.Errorf("%w: %d parts (more than %d)", ErrTooLarge, len(zr.File), maxZipEntries)
	}
	var total uint64
	names := map[string]bool{}
	for _, f := range zr.File {
		total += f.UncompressedSize64
		names[strings.ToLower(f.Name)] = true
	}
	switch {
	case names["xl/workbook.xml"]:
	case names["xl/workbook.bin"]:
		return fmt.Errorf("%w: the file is an Excel binary workbook (.xlsb): save it as .xlsx", ErrContentMismatch)
	case names["mimetype"] && names["content.xml"]:
		return fmt.Errorf("%w: the file is an OpenDocument file (.ods?): save it as .xlsx", ErrContentMismatch)
	case names["word/document.xml"]:
		return fmt.Errorf("%w: the file is a Word document, not a workbook", ErrContentMismatch)
	default:
		return fmt.Errorf("%w: the file is a zip archive without an Excel workbook in it", ErrContentMismatch)
	}
	if total > uint64(maxUnzip) {
		return fmt.Errorf("%w: it unpacks to %d bytes, more than %d (a zip bomb?)", ErrTooLarge, total, maxUnzip)
	}
	return nil
}

// chooseSheet returns the worksheet opts asks for.
func chooseSheet(f *excelize.File, opts XLSXOptions) (string, error) {
	sheets := f.GetSheetList()
	if len(sheets) == 0 {
		return "", fmt.Errorf("%w: the workbook has no worksheets", ErrNoHeader)
	}
	switch {
	case opts.Sheet != "":
		for _, s := range sheets {
			if strings.EqualFold(s, opts.Sheet) {
				return s, nil
			}
		}
		return "", fmt.Errorf("no sheet named %q; the workbook has %s", opts.Sheet, quoteList(sheets))
	case opts.SheetIndex > 0:
		if opts.SheetIndex >= len(sheets) {
			return "", fmt.Errorf("sheet_index %d: the workbook has %d sheets (%s), counted from 0", opts.SheetIndex, len(sheets), quoteList(sheets))
		}
		return sheets[opts.SheetIndex], nil
	}
	for _, s := range sheets {
		if visible, err := f.GetSheetVisible(s); err == nil && visible {
			return s, nil
		}
	}
	return sheets[0], nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func (r *XLSXReader) readHeader(ctx context.Context, headerRow int) error {
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !r.rows.Next() {
			switch {
			case headerRow > 0:
				return fmt.Errorf("%w: header_row %d is past the last row (%d) of sheet %q", ErrNoHeader, headerRow, r.row, r.sheet)
			default:
				return fmt.Errorf("%w: sheet %q is empty", ErrNoHeader, r.sheet)
			}
		}
		r.row++
		if headerRow > 0 && r.row < headerRow {
			continue
		}
		cells, err := r.rows.Columns()
		if err != nil {
			return fmt.Errorf("%w: sheet %q row %d: %w", ErrNoHeader, r.sheet, r.row, err)
		}
		if allBlank(cells) {
			if headerRow > 0 {
				return fmt.Errorf("%w: header_row %d of sheet %q is empty", ErrNoHeader, headerRow, r.sheet)
			}
			continue
		}
		for i, v := range cells {
			if iso, ok := isoDate(v, r.date1904); ok {
				cells[i] = iso
			}
		}
		header, err := normalizeHeader(cells)
		if err != nil {
			return fmt.Errorf("sheet %q row %d: %w", r.sheet, r.row, err)
		}
		r.header = header
		return nil
	}
}

// Header returns the column names; see the package doc.
func (r *XLSXReader) Header() []string { return r.header }

// Sheet returns the name of the worksheet being read.
func (r *XLSXReader) Sheet() string { return r.sheet }

// Progress reports rows returned and, when the workbook records its dimension (Excel does),
// the number of rows below the header.
func (r *XLSXReader) Progress() Progress {
	return Progress{Rows: r.read.Load(), TotalRows: r.totalRows}
}

// Next returns the next row; see the package doc.
func (r *XLSXReader) Next(ctx context.Context) (Record, error) {
	if r.closed {
		return Record{}, ErrClosed
	}
	if r.err != nil {
		return Record{}, r.err
	}
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				r.err = fmt.Errorf("read %s sheet %q: %w", r.path, r.sheet, err)
				return Record{}, r.err
			}
		}
		if !r.rows.Next() {
			if err := r.rows.Error(); err != nil {
				r.err = fmt.Errorf("read %s sheet %q after row %d: %w", r.path, r.sheet, r.row, err)
				return Record{}, r.err
			}
			r.err = io.EOF
			return Record{}, io.EOF
		}
		r.row++
		cells, err := r.rows.Columns()
		for i, v := range cells {
			if iso, ok := isoDate(v, r.date1904); ok {
				cells[i] = iso
			}
		}
		if err == nil && allBlank(cells) {
			continue
		}
		r.ordinal++
		r.read.Store(r.ordinal)
		rec := Record{Ordinal: r.ordinal, Line: r.row, Sheet: r.sheet, Values: cells}
		if err != nil {
			return rec, &RowError{Line: r.row, Sheet: r.sheet, Err: because(ErrCell, "%v", err)}
		}
		for i := len(r.header); i < len(cells); i++ {
			if strings.TrimSpace(cells[i]) != "" {
				msg := fmt.Sprintf("cell %s%d has a value but column %s has no header", columnName(i+1), r.row, columnName(i+1))
				if len(r.header) == 1 {
					msg += " (is the header below a title row? set header_row)"
				}
				return rec, &RowError{Line: r.row, Sheet: r.sheet, Column: i + 1, Err: because(ErrUnnamedColumn, "%s", msg)}
			}
		}
		values := make([]string, len(r.header))
		copy(values, cells)
		rec.Values = values
		return rec, nil
	}
}

// Close releases the workbook and removes its temporary files. It is safe to call twice.
func (r *XLSXReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	if r.rows != nil {
		errs = append(errs, r.rows.Close())
	}
	if r.file != nil {
		errs = append(errs, r.file.Close())
	}
	if r.tmpDir != "" {
		errs = append(errs, os.RemoveAll(r.tmpDir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", r.path, err)
	}
	return nil
}

// columnName turns a 1-based column number into Excel's letters.
func columnName(n int) string {
	name, err := excelize.ColumnNumberToName(n)
	if err != nil {
		return strconv.Itoa(n)
	}
	return name
}

var dimensionRef = regexp.MustCompile(`<(?:\w+:)?dimension\s+ref="[A-Z]+\d+:[A-Z]+(\d+)"`)

// dimensionLastRow returns the last row the worksheet's <dimension> declares, or 0 when it
// declares none (excelize's StreamWriter writes none).
func dimensionLastRow(p *proxyArchive, part string) int {
	head := p.heads[part]
	if head == nil {
		return 0
	}
	m := dimensionRef.FindSubmatch(head.Bytes())
	if m == nil {
		return 0
	}
	last, _ := strconv.Atoi(string(m[1]))
	return last
}
