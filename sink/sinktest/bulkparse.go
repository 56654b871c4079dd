package sinktest

import "strings"

// parseBulk parses and validates a bulkinsert body: a bare JSON array of at most MaxBulkRows
// subscriber objects. It returns the upserts, whose strings point into body, and the number
// of rows in the body as far as it could tell.
func parseBulk(body string, defs *fieldDefs) (ups []upsert, n int, rerr *rowError) {
	return new(scratch).parseBulk(body, defs)
}

// (*scratch).parseBulk is parseBulk working in sc's arrays: the upserts it returns are held
// there, valid until sc parses again.
func (sc *scratch) parseBulk(body string, defs *fieldDefs) (ups []upsert, n int, rerr *rowError) {
	p := scanner{s: body}
	if p.peek() != '[' {
		return nil, 0, rowErrorf(0, "body must be a JSON array of subscriber objects")
	}
	p.i++
	// Every field of every row comes from one member: fields never outgrows this estimate
	// by much, and a row that would is appended to a fresh array by parseRow.
	fields := sc.fields(strings.Count(body, ":"))
	ups = sc.upserts(min(MaxBulkRows, strings.Count(body, "{")))
	members := sc.members[:0]
	defer func() { sc.members = members }()
	if p.peek() == ']' {
		p.i++
	} else {
		for {
			row := len(ups)
			if row == MaxBulkRows {
				return nil, row + countMore(&p), rowErrorf(MaxBulkRows, "more than %d rows in one request", MaxBulkRows)
			}
			if c := p.peek(); c != '{' {
				var m member
				if p.value(&m, 0) != nil {
					return nil, row + 1, rowErrorf(row, "malformed JSON at byte %d", p.i)
				}
				return nil, row + 1 + countRest(&p), rowErrorf(row, "not a JSON object")
			}
			var err error
			if members, err = p.object(members[:0]); err != nil {
				return nil, row + 1, rowErrorf(row, "malformed JSON at byte %d", p.i)
			}
			u, _, reason := defs.parseRow(members, false, fields[len(fields):])
			if reason != "" {
				return nil, row + 1 + countRest(&p), &rowError{row: row, reason: reason}
			}
			if len(fields)+len(u.fields) <= cap(fields) {
				fields = fields[:len(fields)+len(u.fields)]
			}
			ups = append(ups, u)
			c := p.peek()
			p.i++
			if c == ']' {
				break
			}
			if c != ',' {
				return nil, row + 1, rowErrorf(row, "malformed JSON at byte %d", p.i-1)
			}
		}
	}
	if !p.atEnd() {
		return nil, len(ups), rowErrorf(0, "body must be a JSON array of subscriber objects (data after the array)")
	}
	return ups, len(ups), nil
}

// countRest counts the values after the current one (for the request log of a refused body).
func countRest(p *scanner) int {
	if p.peek() != ',' {
		return 0
	}
	p.i++
	return countMore(p)
}

// countMore counts the values left in the array (for the request log of a refused body).
func countMore(p *scanner) int {
	n := 0
	var m member
	for {
		if p.value(&m, 0) != nil {
			return n
		}
		n++
		if p.peek() != ',' {
			return n
		}
		p.i++
	}
}

// scanObject parses a body holding one JSON object.
func scanObject(body string) ([]member, bool) {
	p := scanner{s: body}
	ms, err := p.object(nil)
	return ms, err == nil && p.atEnd()
}
