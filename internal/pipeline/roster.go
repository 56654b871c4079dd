package pipeline

import (
	"github.com/subsync/subsync/internal/hashtab"
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
// It holds hashes only (hashtab.Map): a table of e-mail hash → key hash (8 bytes a slot
// without a key column, 16 with one), and with a key column one of key hash → e-mail hash. Every record read marks its
// e-mail cell (trimmed, lower-cased) as read, rejected rows too: a row that names a person is
// never taken as the person's absence. A row rejected because its e-mail is missing or
// invalid names nobody, so it protects nobody.
type tracker struct {
	roster *state.Roster
	keyed  bool
	claims hashtab.Map // e-mail hash → the key hash that claimed it (0: read without a key)
	keys   hashtab.Map // key hash → the e-mail hash it came with
	moved  hashtab.Map // the e-mail hashes of members whose key came with another address
}

func newTracker(cfg Config) *tracker {
	if cfg.Roster == nil {
		return nil
	}
	return &tracker{roster: cfg.Roster, keyed: cfg.Mapper.KeyColumn() != ""}
}

// read marks an e-mail (hash) as read.
func (t *tracker) read(email uint64) { t.claims.Add(email) }

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
	if k, ok := t.claims.Get(email); ok && k != 0 && k != key {
		return mapping.CodeKeyConflict
	}
	if e, ok := t.keys.Get(key); ok && e != email {
		return mapping.CodeDuplicateKey
	}
	t.claims.Put(email, key)
	t.keys.Put(key, email)
	return ""
}

// claimed reports whether key came with another address in this run, or email with another
// key: a row whose verdict needs its mapped values.
func (t *tracker) claimed(email, key uint64) bool {
	if k, ok := t.claims.Get(email); ok && k != 0 && k != key {
		return true
	}
	e, ok := t.keys.Get(key)
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
		t.moved.Add(old)
	}
	return flags, from
}

// present reports whether a roster row's address or key was read in this run.
func (t *tracker) present(email, key uint64) bool {
	return t.claims.Has(email) || key != 0 && t.keys.Has(key)
}
