package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unsafe"
)

// What sheetScanner.next found.
const (
	tokEOF = iota
	tokRow
	tokCell
	tokRowEnd
)

// maxColumns and maxRows are Excel's limits (XFD, 1048576).
const (
	maxColumns = 16384
	maxRows    = 1 << 20
)

// sheetCell is one <c> element, valid until the next call of sheetScanner.next.
type sheetCell struct {
	col   int    // 1-based
	ref   []byte // the r attribute, or nil
	typ   []byte // the t attribute ("" for a number)
	style []byte // the s attribute, or nil
	v     []byte // the decoded text of <v>
	is    []byte // the decoded text of <is> (its <t> and those of its runs), when hasIS
	hasIS bool
	hasF  bool   // the cell has a formula
	inner []byte // the element's content as written, for formatting by excelize
}

// sheetScanner reads the rows and cells of a worksheet part.
type sheetScanner struct {
	x          *xmlScanner
	inData     bool
	done       bool
	emptyRow   bool // a self-closing <row/> was returned; its end is next
	dimLastRow int  // the last row of <dimension ref="A1:G100">, 0 when absent
	row        int  // the current row number
	cell       sheetCell
	text       []byte // decoded text of the current cell
	is         []byte
	isRuns     []byte
}

var (
	endV  = []byte("</v>")
	endIS = []byte("</t></is>")
)

// next advances to the next row start, cell or row end.
func (s *sheetScanner) next() (int, error) {
	if s.emptyRow {
		s.emptyRow = false
		return tokRowEnd, nil
	}
	x := s.x
	for !s.done {
		if !x.skipTo() {
			break
		}
		t, skip, ok := x.readTag()
		if !ok {
			break
		}
		if skip {
			continue
		}
		local := string(t.local) // compared only: no allocation
		if !s.inData {
			switch local {
			case "dimension":
				if !t.closing {
					s.dimLastRow = dimensionRows(x.buf[x.pos : x.pos+t.n])
				}
			case "sheetData":
				if !t.closing && !t.empty {
					s.inData = true
				}
			}
			x.pos += t.n
			continue
		}
		switch {
		case local == "sheetData" && t.closing:
			s.inData, s.done = false, true
			x.pos += t.n
			return tokEOF, nil
		case local == "row" && t.closing:
			x.pos += t.n
			return tokRowEnd, nil
		case local == "row":
			s.row++
			if v, ok := attr(x.buf[x.pos:x.pos+t.n], "r"); ok {
				n, err := strconv.Atoi(string(v))
				if err != nil || n < 1 || n > maxRows {
					return 0, fmt.Errorf("row %d: row number %q is not one Excel allows", s.row, v)
				}
				s.row = n
			}
			s.emptyRow = t.empty
			s.cell.col = 0
			x.pos += t.n
			return tokRow, nil
		case local == "c" && !t.closing:
			if err := s.readCell(t); err != nil {
				return 0, err
			}
			return tokCell, nil
		}
		x.pos += t.n
	}
	if x.err != nil {
		if errors.Is(x.err, errElementTooLarge) {
			return 0, fmt.Errorf("%w: a cell in row %d (or the markup around it) is larger than %d bytes", ErrTooLarge, s.row, x.limit)
		}
		return 0, x.err
	}
	if s.inData {
		return 0, fmt.Errorf("worksheet ends inside row %d (truncated?): %w", s.row, io.ErrUnexpectedEOF)
	}
	return tokEOF, nil
}

// readCell reads the <c> element whose start tag t is at pos, and moves past it.
func (s *sheetScanner) readCell(t tag) error {
	x := s.x
	c := &s.cell
	c.v, c.is, c.inner = nil, nil, nil
	c.hasIS, c.hasF = false, false
	// The end of the element is found first: finding it may read more, which compacts or
	// grows the buffer, and every slice taken of the buffer before that (the attributes)
	// would then hold other bytes.
	i := -1
	var end []byte
	if !t.empty {
		// The end tag, with the prefix the start tag has.
		var endTag [16]byte
		end = append(append(append(endTag[:0], "</"...), t.qname...), '>')
		if len(t.qname) > 12 {
			end = []byte("</" + string(t.qname) + ">")
		}
		if i = x.index(t.n, end); i < 0 {
			if x.err != nil {
				return fmt.Errorf("%w: a cell in row %d is larger than %d bytes", ErrTooLarge, s.row, x.limit)
			}
			return fmt.Errorf("worksheet ends inside a cell of row %d (truncated?): %w", s.row, io.ErrUnexpectedEOF)
		}
	}
	start := x.buf[x.pos : x.pos+t.n]
	c.ref, _ = attr(start, "r")
	c.typ, _ = attr(start, "t")
	c.style, _ = attr(start, "s")
	if c.ref != nil {
		col := 0
		for _, ch := range c.ref {
			if ch >= 'A' && ch <= 'Z' {
				col = col*26 + int(ch-'A'+1)
			} else if ch >= 'a' && ch <= 'z' {
				col = col*26 + int(ch-'a'+1)
			} else {
				break
			}
			if col > maxColumns {
				break
			}
		}
		if col < 1 || col > maxColumns {
			return fmt.Errorf("row %d: cell reference %q is not one Excel allows", s.row, c.ref)
		}
		c.col = col
	} else {
		c.col++
		if c.col > maxColumns {
			return fmt.Errorf("row %d: more than %d cells", s.row, maxColumns)
		}
	}
	if t.empty {
		x.pos += t.n
		return nil
	}
	content := x.buf[x.pos+t.n : x.pos+i]
	x.pos += i + len(end)
	c.inner = content
	// The usual cell: <v>text</v> and nothing else.
	if len(content) >= 7 && string(content[:3]) == "<v>" && bytes.HasSuffix(content, endV) {
		raw := content[3 : len(content)-4]
		if bytes.IndexByte(raw, '<') < 0 {
			if bytes.IndexAny(raw, "&\r") < 0 {
				c.v = raw
				return nil
			}
			var err error
			s.text, err = appendText(s.text[:0], raw)
			c.v = s.text
			return s.cellErr(err)
		}
	}
	// The usual inline string: <is><t>text</t></is> (or <t xml:space="preserve">).
	if len(content) >= 16 && string(content[:6]) == "<is><t" && (content[6] == '>' || content[6] == ' ') && bytes.HasSuffix(content, endIS) {
		if gt := bytes.IndexByte(content[6:], '>'); gt >= 0 {
			raw := content[6+gt+1 : len(content)-len(endIS)]
			if bytes.IndexByte(raw, '<') < 0 && bytes.IndexByte(content[6:6+gt], '/') < 0 {
				c.hasIS = true
				if bytes.IndexAny(raw, "&\r") < 0 {
					c.is = raw
					return nil
				}
				var err error
				s.is, err = appendText(s.is[:0], raw)
				c.is = s.is
				return s.cellErr(err)
			}
		}
	}
	s.text, s.is, s.isRuns = s.text[:0], s.is[:0], s.isRuns[:0]
	const (
		toV = iota
		toIS
		toRun
	)
	err := elementText(content, func(path []string) int {
		switch {
		case len(path) == 1 && path[0] == "v":
			return toV
		case len(path) == 2 && path[0] == "is" && path[1] == "t":
			return toIS
		case len(path) == 3 && path[0] == "is" && path[1] == "r" && path[2] == "t":
			return toRun
		}
		return -1
	}, func(dst int, data []byte) error {
		switch dst {
		case toV:
			s.text = append(s.text, data...)
		case toIS:
			s.is = append(s.is, data...)
		default:
			s.isRuns = append(s.isRuns, data...)
		}
		return nil
	})
	if err != nil {
		return s.cellErr(err)
	}
	c.v = s.text
	c.hasIS = hasChild(content, "is")
	c.hasF = hasChild(content, "f")
	if c.hasIS {
		s.is = append(s.is, s.isRuns...)
		c.is = s.is
	}
	return nil
}

func (s *sheetScanner) cellErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("row %d column %s: %w", s.row, columnName(s.cell.col), err)
}

// hasChild reports whether content has a child element named name (any prefix).
func hasChild(content []byte, name string) bool {
	for i := 0; i < len(content); {
		j := bytes.IndexByte(content[i:], '<')
		if j < 0 {
			return false
		}
		i += j + 1
		k := i
		for k < len(content) && !isXMLSpace(content[k]) && content[k] != '>' && content[k] != '/' {
			k++
		}
		n := content[i:k]
		if c := bytes.IndexByte(n, ':'); c >= 0 {
			n = n[c+1:]
		}
		if string(n) == name {
			return true
		}
	}
	return false
}

// dimensionRows returns the last row of a <dimension ref="A1:G100"/> tag, 0 when it has none.
func dimensionRows(tag []byte) int {
	ref, ok := attr(tag, "ref")
	if !ok {
		return 0
	}
	i := bytes.IndexByte(ref, ':')
	if i < 0 {
		return 0
	}
	j := i + 1
	for j < len(ref) && (ref[j] < '0' || ref[j] > '9') {
		j++
	}
	n, err := strconv.Atoi(string(ref[j:]))
	if err != nil || j == i+1 {
		return 0
	}
	return n
}

// sharedStrings is a workbook's shared-string table held compactly: the strings end to
// end in one string, and where each one ends.
type sharedStrings struct {
	text string
	ends []uint32
}

func (t *sharedStrings) len() int { return len(t.ends) }

func (t *sharedStrings) at(i int) string {
	start := uint32(0)
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.text[start:t.ends[i]]
}

// readSharedStrings reads a shared-string part: each <si>'s text as excelize gives it (its
// <t> and those of its runs, phonetic runs left out, _xHHHH_ escapes undone). One string
// may take at most limit bytes; all of them together at most 4 GiB.
func readSharedStrings(r io.Reader, limit int) (*sharedStrings, error) {
	x := newXMLScanner(r, limit)
	var arena, direct, runs []byte
	t := &sharedStrings{}
	for x.skipTo() {
		tg, skip, ok := x.readTag()
		if !ok {
			break
		}
		if skip || tg.closing || string(tg.local) != "si" {
			x.pos += tg.n
			continue
		}
		direct, runs = direct[:0], runs[:0]
		if !tg.empty {
			end := []byte("</" + string(tg.qname) + ">")
			i := x.index(tg.n, end)
			if i < 0 {
				break
			}
			content := x.buf[x.pos+tg.n : x.pos+i]
			err := elementText(content, func(path []string) int {
				switch {
				case len(path) == 1 && path[0] == "t":
					return 0
				case len(path) == 2 && path[0] == "r" && path[1] == "t":
					return 1
				}
				return -1
			}, func(dst int, data []byte) error {
				if dst == 0 {
					direct = append(direct, data...)
				} else {
					runs = append(runs, data...)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("shared string %d: %w", len(t.ends), err)
			}
			x.pos += i + len(end)
		} else {
			x.pos += tg.n
		}
		arena = appendBstr(arena, append(direct, runs...))
		if uint64(len(arena)) > 1<<32-1 {
			return nil, fmt.Errorf("%w: the shared strings take more than 4 GiB", ErrTooLarge)
		}
		t.ends = append(t.ends, uint32(len(arena)))
	}
	if x.err != nil {
		if errors.Is(x.err, errElementTooLarge) {
			return nil, fmt.Errorf("%w: shared string %d is larger than %d bytes", ErrTooLarge, len(t.ends), limit)
		}
		return nil, x.err
	}
	if len(arena) > 0 {
		t.text = unsafe.String(&arena[0], len(arena)) // arena is never written again
	}
	return t, nil
}
