package pipeline

import (
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/state"
)

// Member flags of a row of a sync that keeps a roster (Config.Roster): what its
// acknowledgement records there.
const (
	memberAdd   uint8 = 1 << iota // the address (or its key) is new to the roster
	memberMoved                   // the key was another member's: that address is marked moved
	memberCarry                   // the status was carried over from the key's old address
)

// tracker follows, for a sync that keeps a roster, every address and source key the run
// reads: for removals (a member whose address and key the complete read did not contain is
// absent), for moves (a key that comes with a new address), and for the key rejects (one key
// with two addresses, one address with two keys).
//
// It holds hashes only: a table of e-mail hash → key hash (16 bytes a slot, at most 3/4
// full), and with a key column one of key hash → e-mail hash. Every record read marks its
// e-mail cell (trimmed, lower-cased) as read, rejected rows too: a row that names a person is
// never taken as the person's absence. A row rejected because its e-mail is missing or
// invalid names nobody, so it protects nobody.
type tracker struct {
	roster *state.Roster
	keyed  bool
	claims pairTable // e-mail hash → the key hash that claimed it (0: read without a key)
	keys   pairTable // key hash → the e-mail hash it came with
	moved  pairTable // the e-mail hashes of members whose key came with another address
}

func newTracker(cfg Config) *tracker {
	if cfg.Roster == nil {
		return nil
	}
	return &tracker{roster: cfg.Roster, keyed: cfg.Mapper.KeyColumn() != ""}
}

// read marks an e-mail (hash) as read.
func (t *tracker) read(email uint64) { t.claims.putIfAbsent(email, 0) }

// key is the key hash of a mapped row; 0 without a key column or a key.
func (t *tracker) key(r *mapping.Row) uint64 {
	if !t.keyed {
		return 0
	}
	return state.KeyHash(r.Sub.ExternalID)
}

// claim records a mapped row's address and key; it returns the reject code when an earlier
// row claimed either with another (mapping.CodeKeyConflict, mapping.CodeDuplicateKey).
func (t *tracker) claim(email, key uint64) string {
	if key == 0 {
		t.read(email)
		return ""
	}
	if k, ok := t.claims.get(email); ok && k != 0 && k != key {
		return mapping.CodeKeyConflict
	}
	if e, ok := t.keys.get(key); ok && e != email {
		return mapping.CodeDuplicateKey
	}
	t.claims.put(email, key)
	t.keys.put(key, email)
	return ""
}

// claimed reports whether key came with another address in this run, or email with another
// key: a row whose verdict needs its mapped values.
func (t *tracker) claimed(email, key uint64) bool {
	if k, ok := t.claims.get(email); ok && k != 0 && k != key {
		return true
	}
	e, ok := t.keys.get(key)
	return ok && e != email
}

// member is what a row's acknowledgement records in the roster (0: nothing): the address is
// new to it or has a new key, and the key was another member's (moved from that address,
// returned as from).
func (t *tracker) member(email, key uint64) (flags uint8, from uint64) {
	k, ok := t.roster.Member(email)
	if !ok || k != key {
		flags = memberAdd
	}
	if old, ok := t.roster.ByKey(key); ok && old != email {
		flags |= memberAdd | memberMoved
		from = old
		t.moved.put(old, 0)
	}
	return flags, from
}

// present reports whether a roster row's address or key was read in this run.
func (t *tracker) present(email, key uint64) bool {
	if _, ok := t.claims.get(email); ok {
		return true
	}
	if key == 0 {
		return false
	}
	_, ok := t.keys.get(key)
	return ok
}

// pairTable maps 64-bit hashes to 64-bit values with open addressing and linear probing,
// at most 3/4 full: 8 bytes a slot while every value is 0 (a set), 16 once one is not.
type pairTable struct {
	keys []uint64 // 0 marks a free slot; the hash 0 is stored as 1
	vals []uint64 // nil while every value is 0
	n    int
}

func (p *pairTable) find(k uint64) (int, bool) {
	if k == 0 {
		k = 1
	}
	mask := uint64(len(p.keys) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		switch p.keys[i] {
		case k:
			return int(i), true
		case 0:
			return int(i), false
		}
	}
}

func (p *pairTable) get(k uint64) (uint64, bool) {
	if p.n == 0 {
		return 0, false
	}
	i, ok := p.find(k)
	if !ok || p.vals == nil {
		return 0, ok
	}
	return p.vals[i], true
}

func (p *pairTable) put(k, v uint64) { p.set(k, v, true) }

func (p *pairTable) putIfAbsent(k, v uint64) { p.set(k, v, false) }

func (p *pairTable) set(k, v uint64, replace bool) {
	if (p.n+1)*4 > len(p.keys)*3 {
		p.grow()
	}
	if v != 0 && p.vals == nil {
		p.vals = make([]uint64, len(p.keys))
	}
	i, ok := p.find(k)
	if ok && !replace {
		return
	}
	if !ok {
		p.keys[i] = max(k, 1)
		p.n++
	}
	if p.vals != nil {
		p.vals[i] = v
	}
}

func (p *pairTable) grow() {
	oldKeys, oldVals := p.keys, p.vals
	p.keys = make([]uint64, max(1024, 2*len(oldKeys)))
	if oldVals != nil {
		p.vals = make([]uint64, len(p.keys))
	}
	for j, k := range oldKeys {
		if k != 0 {
			i, _ := p.find(k)
			p.keys[i] = k
			if oldVals != nil {
				p.vals[i] = oldVals[j]
			}
		}
	}
}
