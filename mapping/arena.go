package mapping

import (
	"slices"
	"unsafe"

	"github.com/subsync/subsync/sink"
)

// An Arena holds the values Map makes rather than finds in the record (a lower-cased
// e-mail address, a phone number in E.164 form, a date in ISO form, a value with its spaces
// collapsed) and each row's slice of consent and custom fields, a block at a time instead of
// one allocation each. Mapping
// millions of rows, that saves most of the allocator's work.
//
// Reset hands the blocks out again, so that a run maps with the same few blocks over and over
// and allocates nothing: the pipeline gives each chunk of records an Arena, and resets it
// once the chunk's rows have gone into their batches, which keep them with Adopt. Until
// Reset, nothing handed out is reused or written again: a value stays valid as long as the
// Arena is not reset, like any string.
//
// An Arena is not safe for concurrent use. The zero value is ready to use; a nil *Arena
// allocates every value on its own.
type Arena struct {
	text   []byte       // the current text block
	fields []sink.Field // the current fields block
	// Every block made, those before and at the current one in use, for Reset to hand out
	// again.
	texts      [][]byte
	fieldSets  [][]sink.Field
	usedTexts  int
	usedFields int
}

const (
	arenaTextBlock   = 16 << 10 // bytes
	arenaFieldsBlock = 512      // sink.Field values (16 KiB)
	// poison is what Reset writes over the text it takes back: a value used after Reset
	// reads as invalid UTF-8 rather than as some other row's value.
	poison = 0xFF
)

// Reset takes back every value a handed out, to hand out again. Only call it once nothing
// refers to any of them (rows to keep go into another Arena with Adopt first): a value used
// after Reset reads as garbage.
func (a *Arena) Reset() {
	for i, b := range a.texts[:a.usedTexts] {
		b = b[:cap(b)]
		if i == a.usedTexts-1 {
			b = a.text // the current block, used this far
		}
		fill(b, poison)
	}
	for _, f := range a.fieldSets[:a.usedFields] {
		clear(f[:cap(f)]) // and let go of the records the values point into
	}
	a.text, a.fields, a.usedTexts, a.usedFields = nil, nil, 0, 0
}

// fill sets every byte of b to c.
func fill(b []byte, c byte) {
	if len(b) == 0 {
		return
	}
	b[0] = c
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// Adopt copies into a every value of r that is in from (see MapIn), so that r stays valid
// when from is reset.
func (a *Arena) Adopt(r *Row, from *Arena) {
	keep := func(v *string) {
		if *v != "" && from.holdsText(unsafe.StringData(*v)) {
			*v = a.str(unsafe.Slice(unsafe.StringData(*v), len(*v)))
		}
	}
	s := &r.Sub
	for _, v := range [...]*string{&s.Email, &s.Firstname, &s.Lastname, &s.Address, &s.Zip, &s.City,
		&s.Phone, &s.Company, &s.Birthday, &s.Gender, &s.ExternalID} {
		keep(v)
	}
	for i, t := range s.Tags {
		if t != "" && from.holdsText(unsafe.StringData(t)) {
			s.Tags = slices.Clone(s.Tags) // rows may share their tags: change a copy
			for j := i; j < len(s.Tags); j++ {
				keep(&s.Tags[j])
			}
			break
		}
	}
	if len(s.Fields) == 0 {
		return
	}
	if from.holdsField(&s.Fields[0]) {
		f := a.fieldSlice(len(s.Fields))
		copy(f, s.Fields)
		s.Fields = f
	}
	for i := range s.Fields {
		keep(&s.Fields[i].Value)
	}
}

// holdsText reports whether p points into one of a's text blocks in use.
func (a *Arena) holdsText(p *byte) bool {
	for _, b := range a.texts[:a.usedTexts] {
		if within(unsafe.Pointer(p), unsafe.Pointer(unsafe.SliceData(b)), uintptr(cap(b))) {
			return true
		}
	}
	return false
}

// holdsField reports whether p points into one of a's field blocks in use.
func (a *Arena) holdsField(p *sink.Field) bool {
	for _, b := range a.fieldSets[:a.usedFields] {
		if within(unsafe.Pointer(p), unsafe.Pointer(unsafe.SliceData(b)), uintptr(cap(b))*unsafe.Sizeof(sink.Field{})) {
			return true
		}
	}
	return false
}

// within reports whether p points into the n bytes from base on.
func within(p, base unsafe.Pointer, n uintptr) bool {
	return uintptr(p) >= uintptr(base) && uintptr(p)-uintptr(base) < n
}

// str returns the bytes of b as a string in a's current block (see bytes).
func (a *Arena) str(b []byte) string {
	t := a.bytes(len(b))
	copy(t, b)
	return unsafeString(t)
}

// bytes returns n bytes to write a value in, in a's current block (the next block when it is
// full), or of their own when a is nil or n is large. Once written, they are made a string
// with unsafeString and never written again until Reset.
func (a *Arena) bytes(n int) []byte {
	if a == nil || n > arenaTextBlock/8 {
		return make([]byte, n)
	}
	if len(a.text)+n > cap(a.text) {
		if a.usedTexts == len(a.texts) {
			a.texts = append(a.texts, make([]byte, 0, arenaTextBlock))
		}
		a.text = a.texts[a.usedTexts][:0]
		a.usedTexts++
	}
	i := len(a.text)
	a.text = a.text[:i+n] // within capacity: the block never moves
	return a.text[i : i+n : i+n]
}

// unsafeString returns b as a string without copying it. b must never change afterwards.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// fieldSlice returns a slice of n zero fields whose capacity is n, so that appending to it
// copies it out of the block.
func (a *Arena) fieldSlice(n int) []sink.Field {
	if a == nil || n > arenaFieldsBlock/8 {
		return make([]sink.Field, n)
	}
	if len(a.fields)+n > cap(a.fields) {
		if a.usedFields == len(a.fieldSets) {
			a.fieldSets = append(a.fieldSets, make([]sink.Field, 0, arenaFieldsBlock))
		}
		a.fields = a.fieldSets[a.usedFields][:0]
		a.usedFields++
	}
	i := len(a.fields)
	a.fields = a.fields[:i+n]
	return a.fields[i : i+n : i+n]
}
