package sinktest

import "unsafe"

// arenaChunk is the size of the arena's chunks. A value larger than a chunk gets a chunk of
// its own.
const arenaChunk = 4 << 20

// strRef is a string held in an arena: n bytes at off in chunk. The zero strRef is "".
type strRef struct {
	chunk, off, n uint32
}

// arena holds the store's strings (e-mails, keys, packed fields) in large byte chunks that
// hold no pointers, so that the collector does not visit ten million strings one by one.
// It only grows: a chunk is never reallocated and bytes once written never change, so the
// strings it hands out stay valid for as long as they are referenced. A replaced value is
// left where it was (an emulator can afford the garbage).
type arena struct {
	chunks [][]byte
}

// add copies s into the arena.
func (a *arena) add(s string) strRef {
	ref, dst := a.reserve(len(s))
	copy(dst, s)
	return ref
}

// addBytes copies b into the arena.
func (a *arena) addBytes(b []byte) strRef {
	ref, dst := a.reserve(len(b))
	copy(dst, b)
	return ref
}

// reserve returns the reference of n new bytes and those bytes, to be written.
func (a *arena) reserve(n int) (strRef, []byte) {
	if n == 0 {
		return strRef{}, nil
	}
	last := len(a.chunks) - 1
	if last < 0 || cap(a.chunks[last])-len(a.chunks[last]) < n {
		a.chunks = append(a.chunks, make([]byte, 0, max(arenaChunk, n)))
		last++
	}
	c := a.chunks[last]
	off := len(c)
	a.chunks[last] = c[:off+n]
	return strRef{chunk: uint32(last), off: uint32(off), n: uint32(n)}, c[off : off+n]
}

// str returns the string r refers to, without copying it.
func (a *arena) str(r strRef) string {
	if r.n == 0 {
		return ""
	}
	return unsafe.String(&a.chunks[r.chunk][r.off], r.n)
}
