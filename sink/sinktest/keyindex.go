package sinktest

import "hash/maphash"

// keyIndex finds a subscriber's id by its key (the lower-cased e-mail). It is an
// open-addressing hash table with linear probing whose slots hold no pointers: each is the
// key's 32-bit hash in the high half and the id in the low half (0: empty). The keys
// themselves are not held; keyOf returns the key of an id, to tell apart keys whose hashes
// are equal.
type keyIndex struct {
	slots []uint64 // a power of two of them
	n     int      // ids held
	hash  func(string) uint32
	keyOf func(id uint32) string
	// touched is the sum of the slots touch read (it is otherwise unused).
	touched uint64
}

// newKeyIndex returns an empty index whose ids have the keys keyOf tells.
func newKeyIndex(keyOf func(id uint32) string) *keyIndex {
	seed := maphash.MakeSeed()
	return &keyIndex{
		hash:  func(key string) uint32 { return uint32(maphash.String(seed, key)) },
		keyOf: keyOf,
	}
}

// len returns the number of ids held.
func (x *keyIndex) len() int { return x.n }

// find returns the id of key, or 0.
func (x *keyIndex) find(key string) uint32 {
	if x.n == 0 {
		return 0
	}
	i, ok := x.lookup(key, x.hash(key))
	if !ok {
		return 0
	}
	return uint32(x.slots[i])
}

// lookup returns the slot of key (ok) or else the empty slot where the probe ended.
func (x *keyIndex) lookup(key string, h uint32) (int, bool) {
	mask := len(x.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		slot := x.slots[i]
		switch {
		case slot == 0:
			return i, false
		case uint32(slot>>32) == h && x.keyOf(uint32(slot)) == key:
			return i, true
		}
	}
}

// touch reads the slots where the probes for the keys of these hashes start, so that adding
// the keys next finds those slots in the cache. The reads do not wait for one another: their
// cache misses overlap, where add, one key at a time, would wait for memory at each once the
// table outgrows the cache.
func (x *keyIndex) touch(hashes []uint32) {
	if len(x.slots) == 0 {
		return
	}
	mask := len(x.slots) - 1
	var sum uint64
	for _, h := range hashes {
		sum += x.slots[int(h)&mask]
	}
	x.touched = sum // used, so that the reads are made
}

// add returns the id of key, or, when the index does not hold key yet, adds it under next
// (not 0) and returns next and true. One probe serves both: a new key costs a single visit
// to the table (a cache miss, once the table is large).
func (x *keyIndex) add(key string, next uint32) (uint32, bool) {
	if (x.n+1)*4 > len(x.slots)*3 { // at most three quarters full
		x.grow()
	}
	h := x.hash(key)
	i, ok := x.lookup(key, h)
	if ok {
		return uint32(x.slots[i]), false
	}
	x.slots[i] = uint64(h)<<32 | uint64(next)
	x.n++
	return next, true
}

// grow doubles the table, placing each slot again by the hash it holds.
func (x *keyIndex) grow() {
	old := x.slots
	x.slots = make([]uint64, max(16, 2*len(old)))
	mask := len(x.slots) - 1
	for _, slot := range old {
		if slot == 0 {
			continue
		}
		i := int(slot>>32) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = slot
	}
}

// remove takes key out of the index, if it is there. The slots after it move back so that
// every probe still finds its key before an empty slot (no tombstones).
func (x *keyIndex) remove(key string) {
	if x.n == 0 {
		return
	}
	i, ok := x.lookup(key, x.hash(key))
	if !ok {
		return
	}
	x.n--
	mask := len(x.slots) - 1
	for j := i; ; {
		j = (j + 1) & mask
		slot := x.slots[j]
		if slot == 0 {
			x.slots[i] = 0
			return
		}
		// The slot at j may fill the hole at i unless its home lies cyclically in (i, j].
		home := int(slot>>32) & mask
		if (i < j && (home <= i || home > j)) || (i > j && home <= i && home > j) {
			x.slots[i] = slot
			i = j
		}
	}
}
