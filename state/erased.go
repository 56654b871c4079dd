package state

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Erasure: a person who asked to be forgotten is removed from every table of subsync's
// (see [Store.Erase]) but one, subsync_erased, which keeps a keyed hash of their address: the
// address's 64-bit [EmailHash] encrypted with AES-256 under a random key (a keyed
// pseudo-random function). Every sync and import rejects a row whose address hashes to one of
// them (reject code "erased"), and a status pull records nothing for them, so no later run
// brings them back. Every row of every run is checked: the check costs one AES block over the
// hash the filter computes anyway (tens of nanoseconds), where HMAC-SHA256 of the address cost
// a microsecond a row. Two addresses sharing a 64-bit hash (about 1 in 2^64 per pair) would
// make the second one count as erased: the safe side.
//
// The key is generated once, by the first erasure, and kept in the database
// (subsync_erasure_key): every worker of a fleet shares it, it is backed up with the hashes it
// belongs to, and it cannot be lost or changed by a configuration edit (which would let every
// erased person come back silently). The hash is keyed so that it is not the address in
// another form: the unkeyed hash used for fingerprints ([EmailHash]) can be tested against a
// list of candidate addresses by anyone holding it, a keyed hash only by someone who also
// holds the key, which never leaves the database and is never logged. Someone holding the
// whole database can still test a candidate address: erasure protects against what leaves
// the database (logs, exports, job args), not against its own administrator.
//
// The unkeyed fingerprint hash of an address is personal data in that sense (it identifies
// the person to anyone who has a candidate address), so an erasure deletes the person's
// fingerprints too.

// ErasureKey returns the key of the keyed hashes, generating and storing it the first time;
// concurrent first calls (a fleet) agree on one key.
func (s *Store) ErasureKey(ctx context.Context) ([]byte, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	var key []byte
	err := s.db.QueryRowContext(ctx, "SELECT secret FROM subsync_erasure_key WHERE id = 1").Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		fresh := make([]byte, 32)
		if _, err := rand.Read(fresh); err != nil {
			return nil, fmt.Errorf("generate the erasure key: %w", err)
		}
		if _, err := s.db.ExecContext(ctx, `INSERT INTO subsync_erasure_key (id, secret, created_at)
VALUES (1, $1, `+s.d.nowExpr()+`) ON CONFLICT (id) DO NOTHING`, fresh); err != nil {
			return nil, fmt.Errorf("store the erasure key: %w", err)
		}
		err = s.db.QueryRowContext(ctx, "SELECT secret FROM subsync_erasure_key WHERE id = 1").Scan(&key)
	}
	if err != nil {
		return nil, fmt.Errorf("read the erasure key: %w", err)
	}
	s.key = key
	return key, nil
}

// erasedHasher computes keyed hashes of addresses. It is safe for concurrent use.
type erasedHasher struct{ block cipher.Block }

func newErasedHasher(key []byte) (*erasedHasher, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("erasure key: %w", err)
	}
	return &erasedHasher{block: b}, nil
}

// ofHash is the keyed hash of the address whose EmailHash is given: the hash, padded with
// zeros, encrypted.
func (h *erasedHasher) ofHash(emailHash uint64) [aes.BlockSize]byte {
	var in, out [aes.BlockSize]byte
	binary.LittleEndian.PutUint64(in[:], emailHash)
	h.block.Encrypt(out[:], in[:])
	return out
}

// sum is the keyed hash of the address, as stored in subsync_erased (hex).
func (h *erasedHasher) sum(email string) string {
	b := h.ofHash(EmailHash(email))
	return hex.EncodeToString(b[:])
}

// hasher is the erasedHasher of the store's erasure key.
func (s *Store) hasher(ctx context.Context) (*erasedHasher, error) {
	key, err := s.ErasureKey(ctx)
	if err != nil {
		return nil, err
	}
	return newErasedHasher(key)
}

// ErasureHash is the keyed hash of an address under the store's erasure key.
func (s *Store) ErasureHash(ctx context.Context, email string) (string, error) {
	h, err := s.hasher(ctx)
	if err != nil {
		return "", err
	}
	return h.sum(email), nil
}

// ofKeyed is the EmailHash a keyed hash was made of (the cipher is a permutation), and
// whether the keyed hash is one (made with this key).
func (h *erasedHasher) ofKeyed(keyed [aes.BlockSize]byte) (uint64, bool) {
	var plain [aes.BlockSize]byte
	h.block.Decrypt(plain[:], keyed[:])
	return binary.LittleEndian.Uint64(plain[:]), binary.LittleEndian.Uint64(plain[8:]) == 0
}

// erasedSet is the erased people, as loaded with a suppression list: the EmailHash of each,
// recovered from the keyed hashes with the key, held in memory only, so that checking a row
// costs a map lookup of the hash the filter computes anyway. It is immutable and safe for
// concurrent use.
type erasedSet struct {
	hashes map[uint64]struct{}
}

// has reports whether the address whose EmailHash is given is erased.
func (e *erasedSet) has(emailHash uint64) bool {
	_, ok := e.hashes[emailHash]
	return ok
}

// loadErased reads every erased hash (none: a nil set, and no key is generated).
func (s *Store) loadErased(ctx context.Context) (*erasedSet, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT hash FROM subsync_erased")
	if err != nil {
		return nil, fmt.Errorf("load erased people: %w", err)
	}
	defer rows.Close()
	var set *erasedSet
	var h *erasedHasher
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, fmt.Errorf("load erased people: %w", err)
		}
		if set == nil {
			if h, err = s.hasher(ctx); err != nil {
				return nil, err
			}
			set = &erasedSet{hashes: map[uint64]struct{}{}}
		}
		var keyed [aes.BlockSize]byte
		n, err := hex.Decode(keyed[:], []byte(text))
		email, ok := h.ofKeyed(keyed)
		if err != nil || n != len(keyed) || !ok {
			// Never a match rather than a wrong one: a key that no longer fits its hashes
			// would let every erased person back, so it stops every run instead.
			return nil, errors.New("load erased people: a stored keyed hash does not fit the erasure key (subsync_erasure_key was changed?)")
		}
		set.hashes[email] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load erased people: %w", err)
	}
	return set, nil
}

// IsErased reports whether the address belongs to an erased person.
func (s *Store) IsErased(ctx context.Context, email string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_erased").Scan(&n); err != nil || n == 0 {
		if err != nil {
			return false, fmt.Errorf("read erased people: %w", err)
		}
		return false, nil
	}
	h, err := s.ErasureHash(ctx, email)
	if err != nil {
		return false, err
	}
	err = s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_erased WHERE hash = $1", h).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read erased people: %w", err)
	}
	return n > 0, nil
}

// MarkErased records the keyed hashes of addresses (as [Store.Erase] does first), so that
// every run rejects them from its next chunk, and returns the database's time after the
// change: a run that began before it may still have a batch with them in flight (see
// [Store.RunsInFlightSince]).
func (s *Store) MarkErased(ctx context.Context, emails []string) (time.Time, error) {
	h, err := s.hasher(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var now int64
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		for _, e := range emails {
			if err := s.markErased(ctx, tx, h.sum(e)); err != nil {
				return err
			}
		}
		if err := bumpSuppressionVersion(ctx, tx); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT "+s.d.nowExpr()).Scan(&now)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("record %d erased people: %w", len(emails), err)
	}
	return fromMicros(now), nil
}

// markErased records one keyed hash in subsync_erased (once).
func (s *Store) markErased(ctx context.Context, tx *sql.Tx, hash string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO subsync_erased (hash, erased_at) VALUES ($1, `+s.d.nowExpr()+`)
ON CONFLICT (hash) DO NOTHING`, hash)
	return err
}
