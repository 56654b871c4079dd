// Package hashtab holds tables keyed by 64-bit hashes (of e-mail addresses, of source keys)
// in a fraction of the memory of a Go map, for tables of millions: Map, a set or a map of
// hashes that grows as it is filled (a run's addresses and keys), and Ordered, a table built
// once from entries in key order and then only read (a list's stored fingerprints).
//
// Both use open addressing with linear probing, and both mark a free slot with the key 0:
// an entry whose key is 0 is kept apart, beside the slots, so every key is one.
package hashtab

// tables is how many tables a Map is split into, by the top 6 bits of a key.
const tables = 64

// Map maps 64-bit keys to 64-bit values, in tables by the key's top bits, each at most 3/4
// full: 8 bytes a slot while every value is 0 (a set: 11 to 21 bytes a key, where a Go map
// takes about 38), 16 once one is not. Each table grows on its own, so growing holds the old
// and the new slots of one table at a time, not of the whole map. The zero value is an empty
// map. A Map is not safe for concurrent use.
type Map struct {
	t       [tables]table
	n       int
	valued  bool   // a value is not 0: every table keeps values
	hasZero bool   // the key 0 is in the map
	zero    uint64 // its value
}

type table struct {
	keys []uint64 // 0 marks a free slot
	vals []uint64 // nil while the Map is not valued
	n    int
}

// Len is how many keys the map holds.
func (m *Map) Len() int { return m.n }

// Slots is how many slots the map's tables have in all (its memory is 8 or 16 bytes each).
func (m *Map) Slots() int {
	n := 0
	for i := range m.t {
		n += len(m.t[i].keys)
	}
	return n
}

// Has reports whether k is in the map.
func (m *Map) Has(k uint64) bool {
	_, ok := m.Get(k)
	return ok
}

// Get returns k's value and whether k is in the map.
func (m *Map) Get(k uint64) (uint64, bool) {
	if k == 0 {
		return m.zero, m.hasZero
	}
	t := &m.t[k>>58]
	if t.n == 0 {
		return 0, false
	}
	i, ok := t.find(k)
	if !ok || t.vals == nil {
		return 0, ok
	}
	return t.vals[i], true
}

// Add puts k in the map with the value 0 unless it is there, and reports whether it was not.
func (m *Map) Add(k uint64) bool { return m.set(k, 0, false) }

// Put sets k's value, adding k if it is not in the map.
func (m *Map) Put(k, v uint64) { m.set(k, v, true) }

// set adds k with v, or, when k is there and replace, sets its value; it reports whether k
// was added.
func (m *Map) set(k, v uint64, replace bool) bool {
	if v != 0 && !m.valued {
		m.valued = true
		for i := range m.t {
			if t := &m.t[i]; len(t.keys) > 0 {
				t.vals = make([]uint64, len(t.keys))
			}
		}
	}
	if k == 0 {
		added := !m.hasZero
		if added || replace {
			m.zero = v
		}
		if added {
			m.hasZero = true
			m.n++
		}
		return added
	}
	t := &m.t[k>>58]
	if (t.n+1)*4 > len(t.keys)*3 {
		t.grow(m.valued)
	}
	i, ok := t.find(k)
	if ok && !replace {
		return false
	}
	if !ok {
		t.keys[i] = k
		t.n++
		m.n++
	}
	if t.vals != nil {
		t.vals[i] = v
	}
	return !ok
}

// find returns k's slot, or the free slot where it goes.
func (t *table) find(k uint64) (int, bool) {
	mask := uint64(len(t.keys) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		switch t.keys[i] {
		case k:
			return int(i), true
		case 0:
			return int(i), false
		}
	}
}

// grow doubles the table (to 64 slots at first), placing its keys again.
func (t *table) grow(valued bool) {
	oldKeys, oldVals := t.keys, t.vals
	t.keys = make([]uint64, max(64, 2*len(oldKeys)))
	t.vals = nil
	if valued {
		t.vals = make([]uint64, len(t.keys))
	}
	for j, k := range oldKeys {
		if k == 0 {
			continue
		}
		i, _ := t.find(k)
		t.keys[i] = k
		if oldVals != nil {
			t.vals[i] = oldVals[j]
		}
	}
}
