package sources

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"golang.org/x/text/transform"
)

// DefaultMaxRecordBytes bounds one CSV record (a line, or the lines of a quoted field with
// line breaks). A longer record is a row error; it also bounds the memory of a reader.
const DefaultMaxRecordBytes = 1 << 20

// sniffBytes is how much of a file is read to detect its kind, encoding and delimiter.
const sniffBytes = 64 << 10

// CSVOptions overrides what a CSVReader detects. The zero value detects everything.
type CSVOptions struct {
	// Encoding of the file: "" detects it: a byte order mark (UTF-8, UTF-16 LE or BE) decides;
	// without one, a file that is valid UTF-8 but for a few stray lines (at most 100, and at
	// most one line in 100) is UTF-8, anything else is Windows-1252 (what Excel writes on a
	// Western European Windows). See StrayLines for the stray lines. Otherwise one of the
	// Encoding constants or a WHATWG label (utf-8, windows-1252, iso-8859-15, utf-16, ...).
	// A byte order mark is skipped; one that contradicts the configured encoding is an error.
	Encoding string
	// Delimiter is one ASCII character, or "tab". "" detects it from the first records:
	// ',', ';', tab or '|' (see sniffDelimiter).
	Delimiter string
	// HeaderRow is the 1-based line holding the column names; the lines above it are
	// skipped unread (a title, a note). 0 = the first non-blank line.
	HeaderRow int
	// MaxRecordBytes bounds one record. 0 = DefaultMaxRecordBytes.
	MaxRecordBytes int
	// StrayLines says what becomes of a value that is not valid UTF-8 in a file read as
	// UTF-8: StrayDecode ("" too) decodes it as Windows-1252 and records a warning with its
	// line (see [CSVReader.Warnings]); StrayReject rejects its row.
	StrayLines string
}

// CSVReader reads a delimited text file. It implements [Reader].
//
// Parsing follows RFC 4180 as spreadsheet programs write it: fields separated by the
// delimiter; a field in double quotes may hold delimiters, line breaks (CRLF or LF, returned
// as "\n") and doubled quotes (returned as one quote); white space around a quoted field is
// dropped; a quote inside an unquoted field is kept as it is. Lines end with CRLF, LF or
// (old Macs) CR. Values are returned as they are, not trimmed.
//
// Row errors (the row is skipped, the rest of the file flows):
//   - a row with more fields than the header (extra empty fields at the end are ignored, as
//     Excel writes them) or fewer;
//   - a quoted field that is not closed before the end of the file, that is followed by
//     something other than a delimiter, or that runs past MaxRecordBytes: the row is reported
//     at the line where it starts, and reading goes on at the next line, so one stray quote
//     does not swallow the rest of the file;
//   - a line longer than MaxRecordBytes, a NUL byte, or invalid UTF-8 in a file read as UTF-8.
type CSVReader struct {
	path     string
	f        *os.File
	counter  *countingReader
	lines    *lineReader
	delim    byte
	encoding string
	bom      bool
	header   []string
	headLine int // the line the header was read from
	max      int
	utf8     bool // the text is undecoded UTF-8, to be checked per value

	strayReject bool       // reject rows with invalid UTF-8, rather than decode them
	warnings    []RowError // the first maxWarnings warnings
	nWarnings   int64

	size   int64
	rows   atomic.Int64
	err    error
	closed bool
	broken int // the line of the last record read, when it was a row error

	buf       []byte
	ends      []int
	cont      []line
	slab      stringSlab
	cells     []byte // the cells of the record just read, back to back or as on the line
	delimited bool   // cells is the line: the cells with the delimiters between them
}

// OpenCSV opens a CSV file, detects its encoding and delimiter (unless opts sets them) and
// reads its header. The file's content must be text: a workbook, an OLE file or binary data
// fails with ErrContentMismatch, ErrLegacyXLS or ErrEncryptedWorkbook.
func OpenCSV(ctx context.Context, path string, opts CSVOptions) (*CSVReader, error) {
	r, err := openCSV(ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("open csv %s: %w", path, err)
	}
	return r, nil
}

func openCSV(ctx context.Context, path string, opts CSVOptions) (_ *CSVReader, err error) {
	if opts.HeaderRow < 0 || opts.MaxRecordBytes < 0 {
		return nil, fmt.Errorf("header_row %d, max record bytes %d: must not be negative", opts.HeaderRow, opts.MaxRecordBytes)
	}
	r := &CSVReader{path: path, max: cmp.Or(opts.MaxRecordBytes, DefaultMaxRecordBytes)}
	switch opts.StrayLines {
	case "", StrayDecode:
	case StrayReject:
		r.strayReject = true
	default:
		return nil, fmt.Errorf("stray lines %q: want %q or %q", opts.StrayLines, StrayDecode, StrayReject)
	}
	if r.f, err = os.Open(path); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = r.f.Close()
		}
	}()
	st, err := r.f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, errors.New("is a directory")
	}
	r.size = st.Size()
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(r.f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	head = head[:n]
	atEOF := int64(n) == r.size

	bomEnc, bomLen := sniffBOM(head)
	if bomLen == 0 || bomEnc == EncodingUTF8 {
		if kind, what := sniffContent(head); kind != contentText {
			return nil, r.contentError(ctx, kind, what)
		}
	}
	r.bom = bomLen > 0

	// Encoding: configured, announced by a byte order mark, or UTF-8 if valid throughout.
	var dec transform.Transformer
	switch {
	case opts.Encoding != "":
		configured := opts.Encoding
		if strings.EqualFold(configured, "utf-16") && (bomEnc == EncodingUTF16LE || bomEnc == EncodingUTF16BE) {
			configured = bomEnc // utf-16 without an order: the byte order mark gives it
		}
		enc, name, err := textEncoding(configured)
		if err != nil {
			return nil, err
		}
		r.encoding = name
		if enc != nil {
			dec = enc.NewDecoder()
		}
		if bomLen > 0 && bomEnc != name {
			return nil, fmt.Errorf("encoding %q is configured, but the file starts with a %s byte order mark", opts.Encoding, bomEnc)
		}
	case bomLen > 0:
		enc, name, _ := textEncoding(bomEnc)
		r.encoding = name
		if enc != nil {
			dec = enc.NewDecoder()
		}
	default:
		valid := utf8.Valid(head[:len(head)-incompleteRuneTail(head)])
		if !valid || !atEOF {
			// UTF-8 but for a few stray lines is UTF-8: one row pasted from elsewhere must
			// not turn every æøå of the file into mojibake.
			if _, err := r.f.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
			stray, lines, err := strayLines(ctx, r.f)
			if err != nil {
				return nil, err
			}
			if valid = fewStray(stray, lines); !valid {
				// Past the limit: never switch a file of UTF-8 names to Windows-1252 unsaid.
				if valid, err = r.mixedEncoding(ctx); err != nil {
					return nil, err
				}
			}
		}
		if valid {
			r.encoding = EncodingUTF8
		} else {
			enc, name, _ := textEncoding(EncodingWindows1252)
			r.encoding, dec = name, enc.NewDecoder()
		}
	}
	r.utf8 = dec == nil

	// Delimiter: configured or sniffed from the decoded sample.
	sample := head[bomLen:]
	if dec != nil {
		if !atEOF && (r.encoding == EncodingUTF16LE || r.encoding == EncodingUTF16BE) {
			sample = sample[:len(sample)&^1]
		}
		decoded, _, _ := transform.Bytes(dec, sample)
		dec.Reset()
		sample = decoded
	} else if !atEOF {
		sample = sample[:len(sample)-incompleteRuneTail(sample)]
	}
	term := byte('\n')
	if bytes.IndexByte(sample, '\n') < 0 && bytes.IndexByte(sample, '\r') >= 0 {
		term = '\r'
	}
	if opts.Delimiter != "" {
		if r.delim, err = parseDelimiter(opts.Delimiter); err != nil {
			return nil, err
		}
	} else {
		r.delim = sniffDelimiter(skipSampleLines(string(sample), term, opts.HeaderRow-1), atEOF)
	}

	if _, err := r.f.Seek(int64(bomLen), io.SeekStart); err != nil {
		return nil, err
	}
	r.counter = &countingReader{r: r.f}
	r.counter.n.Store(int64(bomLen))
	var text io.Reader = r.counter
	if dec != nil {
		text = transform.NewReader(r.counter, dec)
	}
	r.lines = newLineReader(text, term, r.max)
	if err := r.readHeader(ctx, opts.HeaderRow); err != nil {
		return nil, err
	}
	return r, nil
}

// contentError explains why a file that is not text cannot be read as CSV.
func (r *CSVReader) contentError(ctx context.Context, kind content, what string) error {
	if kind == contentOLE {
		if _, err := r.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		encrypted, err := oleEncrypted(ctx, r.f)
		if err != nil {
			return err
		}
		if encrypted {
			return ErrEncryptedWorkbook
		}
		return ErrLegacyXLS
	}
	return fmt.Errorf("%w: the file is %s, not CSV text", ErrContentMismatch, what)
}

// skipSampleLines drops the first n lines of a sample, for a header below the first line.
func skipSampleLines(sample string, term byte, n int) string {
	rest := sample
	for ; n > 0; n-- {
		i := strings.IndexByte(rest, term)
		if i < 0 {
			return sample // the header lies past the sample: sniff what there is
		}
		rest = rest[i+1:]
	}
	return rest
}

func (r *CSVReader) readHeader(ctx context.Context, headerRow int) error {
	for i := 1; i < headerRow; i++ {
		if _, err := r.lines.next(); err == io.EOF {
			return fmt.Errorf("%w: header_row %d is past the end of the file (%d lines)", ErrNoHeader, headerRow, i-1)
		} else if err != nil {
			return err
		}
	}
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		fields, _, start, rowErr, err := r.readRecord(false)
		if err == io.EOF {
			if r.lines.no == 0 {
				return fmt.Errorf("%w: the file is empty", ErrNoHeader)
			}
			if headerRow > 0 {
				return fmt.Errorf("%w: header_row %d is past the end of the file (%d lines)", ErrNoHeader, headerRow, r.lines.no)
			}
			return fmt.Errorf("%w: the file has only blank lines", ErrNoHeader)
		}
		if err != nil {
			return err
		}
		if rowErr != nil {
			return fmt.Errorf("%w: line %d: %s", ErrNoHeader, start, rowErr.Err)
		}
		if allBlank(fields) {
			if headerRow > 0 {
				return fmt.Errorf("%w: header_row %d is blank", ErrNoHeader, headerRow)
			}
			continue
		}
		for i, f := range fields {
			if r.utf8 && !utf8.ValidString(f) {
				return fmt.Errorf("%w: line %d column %d is not valid %s", ErrNoHeader, start, i+1, r.encoding)
			}
		}
		header, err := normalizeHeader(fields)
		if err != nil {
			return fmt.Errorf("line %d: %w", start, err)
		}
		r.header, r.headLine = header, start
		return nil
	}
}

// Header returns the column names; see the package doc.
func (r *CSVReader) Header() []string { return r.header }

// HeaderLine is the 1-based line the header was read from (the first non-blank one, or
// CSVOptions.HeaderRow).
func (r *CSVReader) HeaderLine() int { return r.headLine }

// warn records a warning.
func (r *CSVReader) warn(w RowError) {
	r.nWarnings++
	if len(r.warnings) < maxWarnings {
		r.warnings = append(r.warnings, w)
	}
}

// Warnings returns how many values were read with a warning (a stray line decoded as
// Windows-1252 in a UTF-8 file), and the first 1000 of them with their lines, in file order.
// Call it after the last Next.
func (r *CSVReader) Warnings() (int64, []RowError) { return r.nWarnings, r.warnings }

// Encoding returns the encoding the file is read in (detected or configured).
func (r *CSVReader) Encoding() string { return r.encoding }

// BOM reports whether the file starts with a byte order mark.
func (r *CSVReader) BOM() bool { return r.bom }

// Delimiter returns the field delimiter (detected or configured).
func (r *CSVReader) Delimiter() rune { return rune(r.delim) }

// Progress reports rows returned and bytes of the file consumed.
func (r *CSVReader) Progress() Progress {
	p := Progress{Rows: r.rows.Load(), TotalBytes: r.size}
	if r.counter != nil {
		p.Bytes = r.counter.n.Load()
	}
	return p
}

// Next returns the next record; see the package doc.
func (r *CSVReader) Next(ctx context.Context) (Record, error) {
	rec, _, err := r.next(ctx, false)
	return rec, err
}

// NextLine returns the next record, a simple one as its line: see [LineReader]. The line views
// the block the reader read it into (never written again), and may be kept.
func (r *CSVReader) NextLine(ctx context.Context) (Record, string, error) { return r.next(ctx, true) }

// NextLines reads up to len(recs) records into recs and lines (as long as recs), as NextLine
// would return them one after the other, and returns how many: a simple record as its line,
// any other as its values, with lines[i] "". It stops after a record that is a row error,
// returning that *RowError (the record is recs[n-1]). At the end it returns the records read
// before it, and then 0 and io.EOF; a fatal error likewise comes after the records before it.
// It costs far less a record than NextLine, for a caller that takes many.
func (r *CSVReader) NextLines(ctx context.Context, recs []Record, lines []string) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	if r.err != nil {
		return 0, r.err
	}
	if err := ctx.Err(); err != nil {
		r.err = fmt.Errorf("read %s: %w", r.path, err)
		return 0, r.err
	}
	n := 0
	for n < len(recs) {
		l, err := r.lines.next()
		if err != nil {
			break // next returns it, as NextLine does
		}
		if whole, ok := r.wholeLine(l); ok {
			recs[n], lines[n] = Record{Ordinal: r.rows.Add(1), Line: l.no}, whole
			r.broken = 0
			n++
			continue
		}
		r.lines.unread(l)
		rec, line, err := r.next(ctx, true)
		if err == nil {
			recs[n], lines[n] = rec, line
			n++
			continue
		}
		var rowErr *RowError
		if errors.As(err, &rowErr) {
			recs[n], lines[n] = rec, ""
			return n + 1, err
		}
		if n > 0 {
			return n, nil // err comes again from the next call
		}
		return 0, err
	}
	if n == 0 {
		_, _, err := r.next(ctx, true) // the end, or a failure
		return 0, err
	}
	return n, nil
}

func (r *CSVReader) next(ctx context.Context, whole bool) (Record, string, error) {
	if r.closed {
		return Record{}, "", ErrClosed
	}
	if r.err != nil {
		return Record{}, "", r.err
	}
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				r.err = fmt.Errorf("read %s: %w", r.path, err)
				return Record{}, "", r.err
			}
		}
		fields, line, start, rowErr, err := r.readRecord(whole)
		if err == io.EOF {
			r.err = io.EOF
			return Record{}, "", io.EOF
		}
		if err != nil {
			r.err = fmt.Errorf("read %s line %d: %w", r.path, r.lines.no, err)
			return Record{}, "", r.err
		}
		r.broken = 0
		if line != "" {
			return Record{Ordinal: r.rows.Add(1), Line: start}, line, nil
		}
		if rowErr == nil && allBlank(fields) {
			continue
		}
		rec := Record{Ordinal: r.rows.Add(1), Line: start, Values: fields}
		if rowErr == nil {
			rowErr = r.check(&rec)
		}
		if rowErr != nil {
			r.broken = start
			return rec, "", rowErr
		}
		return rec, "", nil
	}
}

// Truncated returns, at the end, the line of a last record that could not be read and has no
// line end (the file was cut short), or 0: see [Truncated].
func (r *CSVReader) Truncated() int {
	if r.err != io.EOF || !r.lines.noEnd {
		return 0
	}
	return r.broken
}

// wholeLine returns the text of l when it is a record NextLine hands out whole: a line not
// too long, without a quote, and simple.
func (r *CSVReader) wholeLine(l line) (string, bool) {
	if l.tooLong || bytes.IndexByte(l.text, '"') >= 0 || !r.simple(l.text) {
		return "", false
	}
	return stableString(l.text), true
}

// simple reports whether a line without a quote is a record NextLine hands out whole:
// nothing for check to find (no NUL byte; valid UTF-8 in a file read as UTF-8), the header's
// number of fields (nothing to trim), and not blank.
func (r *CSVReader) simple(text []byte) bool {
	if !asciiNoNUL(text) && (bytes.IndexByte(text, 0) >= 0 || r.utf8 && !utf8.Valid(text)) {
		return false
	}
	if bytes.Count(text, []byte{r.delim})+1 != len(r.header) {
		return false
	}
	for _, c := range text {
		switch {
		case c == r.delim || c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
		case c >= utf8.RuneSelf: // maybe white space (U+00A0, U+3000, ...): as Next decides
			return !allBlank(strings.Split(string(text), string(r.delim)))
		default:
			return true
		}
	}
	return false // blank: only delimiters and white space
}

// check validates a parsed record against the header, trimming extra empty fields.
// rec.Values must be the cells of the record just read, r.cells.
func (r *CSVReader) check(rec *Record) *RowError {
	if !r.cellsClean() {
		for i, v := range rec.Values {
			if strings.IndexByte(v, 0) >= 0 {
				return &RowError{Line: rec.Line, Column: i + 1, Err: because(ErrBinary, "contains a NUL byte (binary data?)")}
			}
			if r.utf8 && !utf8.ValidString(v) {
				if r.strayReject {
					return &RowError{Line: rec.Line, Column: i + 1, Err: because(ErrInvalidUTF8, "is not valid UTF-8 (set the encoding of the file)")}
				}
				rec.Values[i] = decodeStray(v)
				r.warn(RowError{Line: rec.Line, Column: i + 1, Err: because(ErrInvalidUTF8, "is not valid UTF-8: read as Windows-1252")})
			}
		}
	}
	n := len(rec.Values)
	for n > len(r.header) && rec.Values[n-1] == "" {
		n--
	}
	rec.Values = rec.Values[:n]
	if n != len(r.header) {
		col := n + 1
		if n > len(r.header) {
			col = len(r.header) + 1
		}
		return &RowError{Line: rec.Line, Column: col, Err: because(ErrFieldCount, "has %d fields, the header has %d", n, len(r.header))}
	}
	return nil
}

// cellsClean reports, in one pass over the record just read, that none of its cells holds a
// NUL byte or (in a file read as UTF-8) invalid UTF-8, so that they need not be checked one
// by one. Most records are ASCII throughout. A record of non-ASCII UTF-8 is settled at once
// only when r.cells holds the delimiters: cells that are invalid UTF-8 on their own can form
// valid UTF-8 back to back, but not across an ASCII delimiter.
func (r *CSVReader) cellsClean() bool {
	if asciiNoNUL(r.cells) {
		return true
	}
	return r.delimited && bytes.IndexByte(r.cells, 0) < 0 && (!r.utf8 || utf8.Valid(r.cells))
}

// readRecord parses the next record. A recoverable problem comes back as rowErr, with the
// lines after the record's first line pushed back to be read again; err is io.EOF at the
// end, or an I/O error. With whole, a simple record (see simple) comes back as its line,
// with fields nil.
func (r *CSVReader) readRecord(whole bool) (fields []string, wholeLine string, start int, rowErr *RowError, err error) {
	l, err := r.lines.next()
	if err != nil {
		return nil, "", 0, nil, err
	}
	start = l.no
	if whole {
		if text, ok := r.wholeLine(l); ok {
			return nil, text, start, nil, nil
		}
	}
	if l.tooLong {
		return nil, "", start, &RowError{Line: start, Err: because(ErrLineTooLong, "the line is longer than %d bytes", r.max)}, nil
	}
	if bytes.IndexByte(l.text, '"') < 0 {
		// No quote on the line, as on most: the cells are the parts between delimiters.
		r.cells, r.delimited = l.text, true
		return r.slab.splitAt(stableString(l.text), r.delim), "", start, nil, nil
	}
	r.buf, r.ends, r.cont = r.buf[:0], r.ends[:0], r.cont[:0]
	text, i := l.text, 0
	fail := func(col int, cause error, format string, args ...any) ([]string, string, int, *RowError, error) {
		r.lines.pushBack(r.cont)
		r.ends = append(r.ends, len(r.buf))
		return r.split(), "", start, &RowError{Line: start, Column: col, Err: because(cause, format, args...)}, nil
	}
	for {
		col := len(r.ends) + 1
		j := i
		for j < len(text) && (text[j] == ' ' || (text[j] == '\t' && r.delim != '\t')) {
			j++
		}
		if j >= len(text) || text[j] != '"' {
			k := bytes.IndexByte(text[i:], r.delim)
			if k < 0 {
				r.buf = append(r.buf, text[i:]...)
				r.ends = append(r.ends, len(r.buf))
				return r.split(), "", start, nil, nil
			}
			r.buf = append(r.buf, text[i:i+k]...)
			r.ends = append(r.ends, len(r.buf))
			i += k + 1
			continue
		}
		quoteLine := start
		if len(r.cont) > 0 {
			quoteLine = r.cont[len(r.cont)-1].no
		}
		i = j + 1
		for {
			k := bytes.IndexByte(text[i:], '"')
			if k < 0 {
				r.buf = append(r.buf, text[i:]...)
				if len(r.buf) > r.max {
					return fail(col, ErrLineTooLong, "the quoted field starting on line %d runs past %d bytes (unterminated quote?)", quoteLine, r.max)
				}
				nl, err := r.lines.next()
				if err == io.EOF {
					return fail(col, ErrQuote, "the quoted field starting on line %d is never closed (unterminated quote)", quoteLine)
				}
				if err != nil {
					return nil, "", start, nil, err
				}
				nl.text = bytes.Clone(nl.text)
				r.cont = append(r.cont, nl)
				if nl.tooLong {
					return fail(col, ErrLineTooLong, "the quoted field starting on line %d runs past %d bytes (unterminated quote?)", quoteLine, r.max)
				}
				r.buf = append(r.buf, '\n')
				text, i = nl.text, 0
				continue
			}
			r.buf = append(r.buf, text[i:i+k]...)
			i += k + 1
			if i < len(text) && text[i] == '"' {
				r.buf = append(r.buf, '"')
				i++
				continue
			}
			for i < len(text) && (text[i] == ' ' || (text[i] == '\t' && r.delim != '\t')) {
				i++
			}
			if i == len(text) {
				r.ends = append(r.ends, len(r.buf))
				return r.split(), "", start, nil, nil
			}
			if text[i] != r.delim {
				c, _ := utf8.DecodeRune(text[i:])
				return fail(col, ErrQuote, "unexpected %q after the closing quote of the quoted field starting on line %d (a stray or unterminated quote?)", c, quoteLine)
			}
			r.ends = append(r.ends, len(r.buf))
			i++
			break
		}
	}
}

// split turns the record buffer into fields, carved from the reader's slab.
func (r *CSVReader) split() []string {
	r.cells, r.delimited = r.buf, false
	return r.slab.split(r.buf, r.ends)
}

// Close closes the file. It is safe to call twice.
func (r *CSVReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", r.path, err)
	}
	return nil
}
