package mapping

import (
	"unsafe"

	"github.com/subsync/subsync/sink"
)

// An Arena holds the values Map makes rather than finds in the record (a lower-cased
// e-mail address, a phone number in E.164 form, a date in ISO form) and each row's slice of
// consent and custom fields, a block at a time instead of one allocation each. Mapping
// millions of rows, that saves most of the allocator's work.
//
// Nothing in an Arena is ever reused or changed once handed out: a value stays valid as long
// as anything refers to it, like any string. The price is that a block is freed only when
// nothing refers to any value in it, so a value kept long after its row (a sample of rows,
// say) keeps its block of a few kilobytes: clone it (strings.Clone) to keep it alone.
//
// An Arena is not safe for concurrent use: give each goroutine its own. The zero value is
// ready to use; a nil *Arena allocates every value on its own.
type Arena struct {
	text   []byte
	fields []sink.Field
}

const (
	arenaTextBlock   = 16 << 10 // bytes
	arenaFieldsBlock = 512      // sink.Field values (16 KiB)
)

// str returns the bytes of b as a string in a's current block (see bytes).
func (a *Arena) str(b []byte) string {
	t := a.bytes(len(b))
	copy(t, b)
	return unsafeString(t)
}

// bytes returns n bytes to write a value in, in a's current block (a new block when it is
// full), or of their own when a is nil or n is large. Once written, they are made a string
// with unsafeString and never written again.
func (a *Arena) bytes(n int) []byte {
	if a == nil || n > arenaTextBlock/8 {
		return make([]byte, n)
	}
	if len(a.text)+n > cap(a.text) {
		a.text = make([]byte, 0, arenaTextBlock)
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
		a.fields = make([]sink.Field, 0, arenaFieldsBlock)
	}
	i := len(a.fields)
	a.fields = a.fields[:i+n]
	return a.fields[i : i+n : i+n]
}
