package sources

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/xuri/excelize/v2"
)

// DefaultMaxUnzipSize bounds what a workbook may unpack to (all its parts together). A
// million-row contact sheet unpacks to about 0.5 GB; a zip bomb to far more.
const DefaultMaxUnzipSize = 2 << 30

// DefaultMaxSheetSize bounds what the worksheet read may unpack to, and the shared-string
// table: a million-row contact sheet is about 0.5 GB of XML.
const DefaultMaxSheetSize = 1 << 30

// DefaultMaxCellSize bounds the XML of one cell or shared string. Excel holds at most
// 32,767 characters in a cell, about 200 KB of XML at the very worst.
const DefaultMaxCellSize = 1 << 20

// rowSize is the most text one row may hold (for cells of at most maxCell bytes of XML):
// 16 MiB (16 cells of the default largest size, some 500 times what a contact's row holds),
// or two cells of the largest size when cells may be larger.
func rowSize(maxCell int) int { return max(16<<20, 2*maxCell) }

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
	// IsHeader, when set and Sheet, SheetIndex and HeaderRow are not, finds the worksheet
	// and the header row: the first visible sheet (in tab order) with a row among its
	// first HeaderSearchRows whose cells IsHeader accepts (the caller's mapping finds an
	// e-mail column in them), and that row. With none, OpenXLSX fails naming the sheets
	// and rows it read and listing the workbook's sheets.
	IsHeader func(cells []string) bool
	// MaxUnzipSize bounds what the workbook may unpack to. 0 = DefaultMaxUnzipSize.
	MaxUnzipSize int64
	// MaxSheetSize bounds what the worksheet (and the shared-string table) may unpack to.
	// 0 = DefaultMaxSheetSize.
	MaxSheetSize int64
	// MaxCellSize bounds the XML of one cell or shared string. 0 = DefaultMaxCellSize.
	MaxCellSize int
	// TempDir holds the reader's temporary directory, excelize's while the workbook is read
	// (removed on Close; the directories of killed runs are removed by the next OpenXLSX).
	// Nothing of the workbook is unpacked there: the worksheet is streamed, the shared
	// strings are held in memory, and excelize is given only small parts (xlsxparts.go).
	// "" = os.TempDir().
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
// xlsxzip.go); the worksheet is streamed out of its zip entry by a scanner of its own
// (xlsxsheet.go), a cell at a time, and every value is the one excelize's row iterator gives
// (xlsxcell.go; a differential test and a fuzz target hold the two together). excelize
// reads the rest of the workbook: its sheets, styles and number formats. The one cost that
// grows with the data is the shared-string table (Excel keeps text cells there), held in
// one string with 4 bytes of index a string. What a reader may hold is bounded: a worksheet
// or shared-string table unpacks to at most MaxSheetSize, one cell or shared string takes at
// most MaxCellSize, and the readers of a process share one memory budget (xlsxmem.go).
//
// Opening fails with a clear error for an encrypted workbook (ErrEncryptedWorkbook), an
// Excel 97-2003 .xls (ErrLegacyXLS), a file that is not a workbook (ErrContentMismatch), a
// truncated or corrupt file, and one that would unpack to more than MaxUnzipSize or breaks
// any other bound (ErrTooLarge: a part, an element, a row larger than it may be, see
// xlsxparts.go). Only the parts the reader needs are unpacked.
type XLSXReader struct {
	path     string
	tmpDir   string
	tmpLock  *os.File     // held while the reader is open (see xlsxtmp.go)
	memory   *memoryClaim // what the reader holds of the process's budget
	osFile   *os.File
	file     *excelize.File
	sheetRC  io.ReadCloser
	scan     *sheetScanner
	cells    *cellFormatter
	sheet    string
	sheets   []string // the workbook's worksheets, in order
	header   []string
	headRow  int  // the worksheet row the header was read from
	row      int  // the worksheet row last read
	date1904 bool // serial numbers count days from 1904, not 1900

	rowBuf []byte     // the current row's text
	spans  []cellSpan // where each cell's text is in rowBuf
	maxRow int        // the most text rowBuf may hold

	totalRows  int64
	totalBytes int64        // of the worksheet's XML
	sheetBytes atomic.Int64 // of the worksheet's XML, read so far
	read       atomic.Int64
	ordinal    int64
	err        error
	closed     bool
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
	if opts.HeaderRow < 0 || opts.SheetIndex < 0 || opts.MaxUnzipSize < 0 || opts.MaxSheetSize < 0 || opts.MaxCellSize < 0 {
		return nil, fmt.Errorf("header_row %d, sheet_index %d, max unzip size %d, max sheet size %d, max cell size %d: must not be negative",
			opts.HeaderRow, opts.SheetIndex, opts.MaxUnzipSize, opts.MaxSheetSize, opts.MaxCellSize)
	}
	maxUnzip := cmp.Or(opts.MaxUnzipSize, DefaultMaxUnzipSize)
	maxSheet := cmp.Or(opts.MaxSheetSize, DefaultMaxSheetSize)
	maxCell := cmp.Or(opts.MaxCellSize, DefaultMaxCellSize)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}() // else the reader closes it: the worksheet is streamed from it
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

	partsCost, err := checkParts(ctx, zr, maxCell)
	if err != nil {
		return nil, err
	}

	r := &XLSXReader{path: path, osFile: f, maxRow: rowSize(maxCell)}
	if r.tmpDir, r.tmpLock, err = makeTempDir(opts.TempDir); err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = r.Close()
		}
	}()
	sstPart := sharedStringsPart(zr)
	if r.memory, err = claimMemory(ctx, partSize(zr, sstPart), maxCell, partsCost); err != nil {
		return nil, err
	}
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
	sheets := r.file.GetSheetList() // before the formatter adds its scratch sheet
	r.sheets = sheets
	auto := opts.Sheet == "" && opts.SheetIndex == 0 && opts.HeaderRow == 0 && opts.IsHeader != nil
	if !auto {
		if r.sheet, err = chooseSheet(r.file, opts); err != nil {
			return nil, err
		}
	}
	sst, err := loadSharedStrings(ctx, zr, sstPart, maxSheet, maxCell)
	if err != nil {
		return nil, err
	}
	if r.cells, err = newCellFormatter(r.file, sst); err != nil {
		return nil, err
	}
	parts := sheetParts(zr)
	open := func(sheet string) error {
		if r.sheetRC != nil {
			_ = r.sheetRC.Close()
		}
		r.sheet, r.row = sheet, 0
		r.sheetBytes.Store(0)
		part := parts[strings.ToLower(sheet)]
		rc, err := openPart(ctx, zr, part, maxSheet)
		if err != nil {
			return fmt.Errorf("sheet %q: %w", sheet, err)
		}
		rc.(*partReader).done = &r.sheetBytes
		r.sheetRC = rc
		r.totalBytes = partSize(zr, part)
		r.scan = &sheetScanner{x: newXMLScanner(rc, maxCell)}
		return nil
	}
	headerRow := opts.HeaderRow
	if auto {
		sheet, row, err := r.findHeader(ctx, sheets, open, opts.IsHeader)
		if err != nil {
			return nil, err
		}
		headerRow = row
		if err := open(sheet); err != nil {
			return nil, err
		}
	} else if err := open(r.sheet); err != nil {
		return nil, err
	}
	if err := r.readHeader(ctx, headerRow); err != nil {
		return nil, err
	}
	if last := r.scan.dimLastRow; last > r.row {
		r.totalRows = int64(last - r.row)
	}
	return r, nil
}

// openPart opens the archive entry name (compared case-insensitively) for reading.
// It may unpack to at most limit bytes.
func openPart(ctx context.Context, zr *zip.Reader, name string, limit int64) (io.ReadCloser, error) {
	for _, f := range zr.File {
		if strings.EqualFold(f.Name, name) {
			if f.UncompressedSize64 > uint64(limit) {
				return nil, fmt.Errorf("%w: %s unpacks to %d bytes, more than the %d one part may (a zip bomb?)", ErrTooLarge, f.Name, f.UncompressedSize64, limit)
			}
			rc, err := f.Open()
			if err != nil {
				return nil, fmt.Errorf("unpack %s: %w", f.Name, err)
			}
			return &partReader{ctx: ctx, f: f, rc: rc, left: limit, limit: limit}, nil
		}
	}
	return nil, fmt.Errorf("the workbook has no part %q for it (a damaged workbook?)", name)
}

// partReader reads an archive entry, honouring ctx and naming the entry in errors.
type partReader struct {
	ctx   context.Context
	f     *zip.File
	rc    io.ReadCloser
	left  int64 // what it may still unpack to
	limit int64
	done  *atomic.Int64 // bytes unpacked, for Progress; nil when not wanted
}

func (p *partReader) Read(b []byte) (int, error) {
	if err := p.ctx.Err(); err != nil {
		return 0, err
	}
	if p.left <= 0 {
		var one [1]byte
		n, err := p.rc.Read(one[:])
		if n == 0 && err != nil {
			return 0, p.wrap(err)
		}
		return 0, fmt.Errorf("unpack %s: %w: it unpacks to more than the %d bytes one part may (a zip bomb?)", p.f.Name, ErrTooLarge, p.limit)
	}
	n, err := p.rc.Read(b[:min(int64(len(b)), p.left)])
	p.left -= int64(n)
	if p.done != nil {
		p.done.Add(int64(n))
	}
	return n, p.wrap(err)
}

func (p *partReader) wrap(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if errors.Is(err, zip.ErrFormat) {
		err = fmt.Errorf("%w: it unpacks to more than the %d bytes its header declares (%w)", ErrTooLarge, p.f.UncompressedSize64, err)
	}
	return fmt.Errorf("unpack %s: %w", p.f.Name, err)
}

func (p *partReader) Close() error { return p.rc.Close() }

// loadSharedStrings reads the workbook's shared-string table (none is an empty table).
func loadSharedStrings(ctx context.Context, zr *zip.Reader, name string, maxPart int64, maxCell int) (*sharedStrings, error) {
	if name == "" {
		return &sharedStrings{}, nil
	}
	rc, err := openPart(ctx, zr, name, maxPart)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	sst, err := readSharedStrings(rc, maxCell)
	if err != nil {
		return nil, fmt.Errorf("shared strings: %w", err)
	}
	return sst, nil
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

// HeaderSearchRows is how far down a worksheet XLSXOptions.IsHeader looks for the header.
const HeaderSearchRows = 20

// findHeader returns the first visible sheet with a row among its first HeaderSearchRows
// that isHeader accepts, and that row. open makes the reader read a sheet.
func (r *XLSXReader) findHeader(ctx context.Context, sheets []string, open func(string) error, isHeader func([]string) bool) (string, int, error) {
	var read []string
	for _, sheet := range sheets {
		if visible, err := r.file.GetSheetVisible(sheet); err != nil || !visible {
			continue
		}
		if err := open(sheet); err != nil {
			return "", 0, err
		}
		last := 0
		for {
			if err := ctx.Err(); err != nil {
				return "", 0, err
			}
			ok, err := r.readRow()
			if err != nil {
				return "", 0, fmt.Errorf("sheet %q after row %d: %w", sheet, r.row, err)
			}
			if !ok || r.row > HeaderSearchRows {
				break
			}
			last = r.row
			cells, cellErr := r.rowCells()
			if cellErr != nil || allBlank(cells) {
				continue
			}
			header, err := normalizeHeader(cells)
			if err == nil && isHeader(header) {
				return sheet, r.row, nil
			}
		}
		switch last {
		case 0:
			read = append(read, fmt.Sprintf("sheet %q (empty)", sheet))
		case 1:
			read = append(read, fmt.Sprintf("sheet %q row 1", sheet))
		default:
			read = append(read, fmt.Sprintf("sheet %q rows 1-%d", sheet, last))
		}
	}
	return "", 0, fmt.Errorf("%w: no row with a column for the e-mail address in %s; the workbook has %s (set sheet and header_row)",
		ErrNoHeader, strings.Join(read, ", "), quoteList(sheets))
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
		ok, err := r.readRow()
		if err != nil {
			return fmt.Errorf("sheet %q after row %d: %w", r.sheet, r.row, err)
		}
		if ok && headerRow > 0 && r.row > headerRow {
			return fmt.Errorf("%w: header_row %d of sheet %q is empty", ErrNoHeader, headerRow, r.sheet)
		}
		if !ok {
			switch {
			case headerRow > 0:
				return fmt.Errorf("%w: header_row %d is past the last row (%d) of sheet %q", ErrNoHeader, headerRow, r.row, r.sheet)
			default:
				return fmt.Errorf("%w: sheet %q is empty", ErrNoHeader, r.sheet)
			}
		}
		if headerRow > 0 && r.row < headerRow {
			continue
		}
		cells, cellErr := r.rowCells()
		if cellErr != nil {
			return fmt.Errorf("%w: sheet %q row %d: %w", ErrNoHeader, r.sheet, r.row, cellErr)
		}
		if allBlank(cells) {
			if headerRow > 0 {
				return fmt.Errorf("%w: header_row %d of sheet %q is empty", ErrNoHeader, headerRow, r.sheet)
			}
			continue
		}
		header, err := normalizeHeader(cells)
		if err != nil {
			return fmt.Errorf("sheet %q row %d: %w", r.sheet, r.row, err)
		}
		r.header, r.headRow = header, r.row
		return nil
	}
}

// cellSpan is where a cell's text is in rowBuf; err is set when it could not be formatted.
type cellSpan struct {
	col        int
	start, end int
	err        error
}

// readRow reads the next row of the worksheet into rowBuf and spans; false at the end.
// Cells whose text is empty (and that hold no formula) are left out, as excelize does.
func (r *XLSXReader) readRow() (bool, error) {
	r.rowBuf, r.spans = r.rowBuf[:0], r.spans[:0]
	inRow := false
	for {
		tok, err := r.scan.next()
		if err != nil {
			return false, err
		}
		switch tok {
		case tokEOF:
			if inRow {
				return true, nil
			}
			return false, nil
		case tokRow:
			r.row = r.scan.row
			inRow = true
		case tokRowEnd:
			if inRow {
				return true, nil
			}
		case tokCell:
			if !inRow {
				continue // a cell outside a row: excelize ignores it too
			}
			c := &r.scan.cell
			start := len(r.rowBuf)
			r.rowBuf, err = r.cells.appendValue(r.rowBuf, c)
			if len(r.rowBuf) > r.maxRow {
				return false, fmt.Errorf("%w: row %d is larger than %d bytes", ErrTooLarge, r.row, r.maxRow)
			}
			if err != nil || len(r.rowBuf) > start || c.hasF {
				r.spans = append(r.spans, cellSpan{col: c.col, start: start, end: len(r.rowBuf), err: err})
			}
		}
	}
}

// rowCells returns the cells of the row readRow read, as many as its last cell's column;
// err is the first cell that could not be formatted.
func (r *XLSXReader) rowCells() ([]string, *RowError) {
	if len(r.spans) == 0 {
		return nil, nil
	}
	text := string(r.rowBuf)
	n := 0
	for _, sp := range r.spans {
		n = max(n, sp.col)
	}
	cells := make([]string, n)
	var rowErr *RowError
	for _, sp := range r.spans {
		v := text[sp.start:sp.end]
		if len(v) > 0 && v[0] == 0 {
			if iso, ok := isoDate(v, r.date1904); ok {
				v = iso
			}
		}
		cells[sp.col-1] = v
		if sp.err != nil && rowErr == nil {
			rowErr = &RowError{Line: r.row, Sheet: r.sheet, Column: sp.col, Err: because(ErrCell, "%v", sp.err)}
		}
	}
	return cells, rowErr
}

// Header returns the column names; see the package doc.
func (r *XLSXReader) Header() []string { return r.header }

// Sheet returns the name of the worksheet being read.
func (r *XLSXReader) Sheet() string { return r.sheet }

// Sheets returns the names of the workbook's worksheets, in order.
func (r *XLSXReader) Sheets() []string { return slices.Clone(r.sheets) }

// HeaderLine is the worksheet row the header was read from (rows above it, a title, are
// skipped).
func (r *XLSXReader) HeaderLine() int { return r.headRow }

// Progress reports rows returned and, when the workbook records its dimension (Excel does),
// the number of rows below the header.
// Bytes and TotalBytes count the worksheet's XML (unpacked), so a sheet without a dimension
// still has a total and an ETA.
func (r *XLSXReader) Progress() Progress {
	return Progress{Rows: r.read.Load(), TotalRows: r.totalRows, Bytes: r.sheetBytes.Load(), TotalBytes: r.totalBytes}
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
		ok, err := r.readRow()
		if err != nil {
			r.err = fmt.Errorf("read %s sheet %q after row %d: %w", r.path, r.sheet, r.row, err)
			return Record{}, r.err
		}
		if !ok {
			r.err = io.EOF
			return Record{}, io.EOF
		}
		cells, cellErr := r.rowCells()
		if cellErr == nil && allBlank(cells) {
			continue
		}
		r.ordinal++
		r.read.Store(r.ordinal)
		rec := Record{Ordinal: r.ordinal, Line: r.row, Sheet: r.sheet, Values: cells}
		if cellErr != nil {
			return rec, cellErr
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
		if len(cells) != len(r.header) {
			values := make([]string, len(r.header))
			copy(values, cells)
			rec.Values = values
		}
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
	if r.sheetRC != nil {
		errs = append(errs, r.sheetRC.Close())
	}
	if r.file != nil {
		errs = append(errs, r.file.Close())
	}
	if r.osFile != nil {
		errs = append(errs, r.osFile.Close())
	}
	if r.tmpDir != "" {
		errs = append(errs, os.RemoveAll(r.tmpDir))
	}
	if r.tmpLock != nil {
		errs = append(errs, r.tmpLock.Close())
	}
	if r.memory != nil {
		r.memory.release()
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
