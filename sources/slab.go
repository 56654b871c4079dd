package sources

import (
	"strings"
)

// Sizes of the blocks a stringSlab carves rows from. A kept value keeps its whole block
// alive: 16 KiB of text (about 200 rows of a contact file) and 1024 string headers, small
// enough that a caller keeping a few rows (a preview, rejects awaiting a checkpoint) holds
// little memory, large enough that a row costs a small fraction of an allocation.
const (
	slabTextBytes = 16 << 10
	slabStrings   = 1024
)

// stringSlab turns a row's cells, given as one byte buffer and the end of each cell in it,
// into strings, allocating text and string slices in blocks shared by many rows instead of
// two allocations a row. A block is never written again once a part of it has been handed
// out, so the strings and slices it returns may be kept by the caller for as long as it
// wants, as freshly allocated ones could.
type stringSlab struct {
	text strings.Builder // the current text block; only appended to
	vals []string        // the unused rest of the current string block
}

// split returns the cells of buf, cell i ending at ends[i] (and starting at ends[i-1]).
// The slice has no spare capacity: appending to it never touches another row's cells.
func (s *stringSlab) split(buf []byte, ends []int) []string {
	str := s.string(buf)
	fields := s.strings(len(ends))
	prev := 0
	for i, end := range ends {
		fields[i] = str[prev:end]
		prev = end
	}
	return fields
}

// splitAt returns the parts of line between the delimiters, as parts of str (not copied).
// The slice has no spare capacity.
func (s *stringSlab) splitAt(str string, delim byte) []string {
	n := strings.Count(str, string(delim)) + 1
	fields := s.strings(n)
	for i := range n - 1 {
		k := strings.IndexByte(str, delim)
		fields[i] = str[:k]
		str = str[k+1:]
	}
	fields[n-1] = str
	return fields
}

// strings returns n empty strings without spare capacity, carved from the current block.
func (s *stringSlab) strings(n int) []string {
	if n > len(s.vals) {
		if n > slabStrings/4 {
			return make([]string, n) // a wide row: its own allocation
		}
		s.vals = make([]string, slabStrings)
	}
	fields := s.vals[:n:n]
	s.vals = s.vals[n:]
	return fields
}

// string returns buf as a string, carved from the current text block.
func (s *stringSlab) string(buf []byte) string {
	if len(buf) == 0 {
		return ""
	}
	if len(buf) > slabTextBytes/4 {
		return string(buf) // a long row: its own allocation, not a block's worth of waste
	}
	if s.text.Cap()-s.text.Len() < len(buf) {
		// Start a new block rather than let the Builder grow (and copy) this one: strings
		// already handed out keep pointing into the old block, which stays as it is.
		s.text = strings.Builder{}
		s.text.Grow(slabTextBytes)
	}
	start := s.text.Len()
	s.text.Write(buf)
	return s.text.String()[start:]
}
