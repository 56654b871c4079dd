package state

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
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

// ErasureRequest is an address waiting to be erased. The address is kept only until its
// erasure completes ([Store.CompleteErasure]): a job's arguments never carry it.
type ErasureRequest struct {
	ID    int64
	Hash  string // the keyed hash
	Email string
}

// RequestErasure records addresses to erase (an address already waiting is kept once) and
// returns their keyed hashes, in order.
func (s *Store) RequestErasure(ctx context.Context, emails []string) ([]string, error) {
	h, err := s.hasher(ctx)
	if err != nil {
		return nil, err
	}
	hashes := make([]string, len(emails))
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		for i, e := range emails {
			hashes[i] = h.sum(e)
			if _, err := tx.ExecContext(ctx, `INSERT INTO subsync_erasure_request (hash, email, requested_at)
VALUES ($1, $2, `+s.d.nowExpr()+`) ON CONFLICT (hash) DO NOTHING`, hashes[i], NormaliseEmail(e)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record %d erasure requests: %w", len(emails), err)
	}
	return hashes, nil
}

// ErasureRequests returns the erasures waiting, oldest first.
func (s *Store) ErasureRequests(ctx context.Context) ([]ErasureRequest, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, hash, email FROM subsync_erasure_request ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("read erasure requests: %w", err)
	}
	defer rows.Close()
	var out []ErasureRequest
	for rows.Next() {
		var r ErasureRequest
		if err := rows.Scan(&r.ID, &r.Hash, &r.Email); err != nil {
			return nil, fmt.Errorf("read erasure requests: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read erasure requests: %w", err)
	}
	return out, nil
}

// ErasurePending reports how many of the keyed hashes still wait for their erasure.
func (s *Store) ErasurePending(ctx context.Context, hashes []string) (int, error) {
	n := 0
	for _, h := range hashes {
		var c int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_erasure_request WHERE hash = $1", h).Scan(&c); err != nil {
			return 0, fmt.Errorf("read erasure requests: %w", err)
		}
		n += c
	}
	return n, nil
}

// CompleteErasure deletes a request once the person is erased everywhere.
func (s *Store) CompleteErasure(ctx context.Context, id int64) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM subsync_erasure_request WHERE id = $1", id); err != nil {
		return fmt.Errorf("complete erasure request %d: %w", id, err)
	}
	return nil
}

// Erased counts what one erasure removed, by table (no personal data: an audit line).
type Erased map[string]int64

// Total is how many rows were removed.
func (e Erased) Total() int64 {
	var n int64
	for _, v := range e {
		n += v
	}
	return n
}

// personalData is one table's deletion of a person's data; it returns how many rows went.
// Every table that can hold an address (or its unkeyed hash) has one: a table added later
// that holds addresses adds its deletion here (the erasure test scans every table).
type personalData struct {
	table  string
	delete func(ctx context.Context, s *Store, tx *sql.Tx, email string) (int64, error)
}

var personalDataTables = []personalData{
	{"subsync_suppression", func(ctx context.Context, _ *Store, tx *sql.Tx, email string) (int64, error) {
		return execCount(ctx, tx, "DELETE FROM subsync_suppression WHERE email = $1", email)
	}},
	{"subsync_writeback", func(ctx context.Context, _ *Store, tx *sql.Tx, email string) (int64, error) {
		return execCount(ctx, tx, `DELETE FROM subsync_writeback
WHERE change_id IN (SELECT id FROM subsync_status_change WHERE email = $1)`, email)
	}},
	{"subsync_status_change", func(ctx context.Context, _ *Store, tx *sql.Tx, email string) (int64, error) {
		return execCount(ctx, tx, "DELETE FROM subsync_status_change WHERE email = $1", email)
	}},
	{"subsync_reject", eraseMentions("subsync_reject", "more_problems")},
	{"subsync_warning", eraseMentions("subsync_warning")},
	{"subsync_roster", func(ctx context.Context, _ *Store, tx *sql.Tx, email string) (int64, error) {
		return execCount(ctx, tx, "DELETE FROM subsync_roster WHERE email = $1", email)
	}},
	{"subsync_removal", eraseRemoved},
	{"subsync_fingerprint", eraseFingerprints},
	{"subsync_staged_file", eraseStaged},
}

// eraseMentions deletes a run's rejects or warnings (table) whose value, reason, whole row or
// other columns (more: a reject's other problems) hold the address.
func eraseMentions(table string, more ...string) func(context.Context, *Store, *sql.Tx, string) (int64, error) {
	return func(ctx context.Context, s *Store, tx *sql.Tx, email string) (int64, error) {
		find := "instr(lower(%[1]s), $1) > 0"
		if s.d == Postgres {
			find = "strpos(lower(%[1]s), $1) > 0"
		}
		conds := make([]string, 0, 3+len(more))
		for _, col := range append([]string{"value", "reason", "row_values"}, more...) {
			conds = append(conds, fmt.Sprintf(find, col))
		}
		return execCount(ctx, tx, "DELETE FROM "+table+" WHERE "+strings.Join(conds, " OR "), email)
	}
}

func execCount(ctx context.Context, tx *sql.Tx, q string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Erase removes a person's data from every table that holds it (the suppression list, the
// status change log and its write-backs, rejects and warnings whose value, reason or row holds
// the address, the rosters of syncs,
// fingerprints in every list, staged files that contain the address) and records the keyed
// hash in subsync_erased, in one transaction; the suppression list's version moves, so runs
// under way reject the address from their next chunk. Erasing twice is harmless.
//
// A staged file that holds the address is deleted whole: the import queued with it then fails
// and says so, and importing the file again rejects the erased row.
func (s *Store) Erase(ctx context.Context, email string) (Erased, error) {
	return s.erase(ctx, email, false)
}

// EraseDryRun counts what [Store.Erase] would remove, changing nothing.
func (s *Store) EraseDryRun(ctx context.Context, email string) (Erased, error) {
	return s.erase(ctx, email, true)
}

// errDryRun rolls back the transaction of a dry run.
var errDryRun = errors.New("dry run")

func (s *Store) erase(ctx context.Context, email string, dryRun bool) (Erased, error) {
	email = NormaliseEmail(email)
	var hash string
	if !dryRun { // a dry run does not create the key
		h, err := s.hasher(ctx)
		if err != nil {
			return nil, err
		}
		hash = h.sum(email)
	}
	out := Erased{}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		clear(out)
		if !dryRun {
			if err := s.markErased(ctx, tx, hash); err != nil {
				return fmt.Errorf("record the keyed hash: %w", err)
			}
		}
		for _, p := range personalDataTables {
			n, err := p.delete(ctx, s, tx, email)
			if err != nil {
				return fmt.Errorf("%s: %w", p.table, err)
			}
			if n > 0 {
				out[p.table] = n
			}
		}
		if dryRun {
			return errDryRun
		}
		return bumpSuppressionVersion(ctx, tx)
	})
	if err != nil && !(dryRun && errors.Is(err, errDryRun)) {
		return nil, fmt.Errorf("erase: %w", err)
	}
	return out, nil
}

// eraseFingerprints removes the address's fingerprint from every list.
func eraseFingerprints(ctx context.Context, _ *Store, tx *sql.Tx, email string) (int64, error) {
	h := EmailHash(email)
	n, err := execCount(ctx, tx, "DELETE FROM subsync_fingerprint_recent WHERE email = $1", int64(h))
	if err != nil {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT list_id, part, data FROM subsync_fingerprint WHERE bucket = $1", bucketOf(h))
	if err != nil {
		return 0, err
	}
	type bucket struct {
		list int64
		part int
		data []byte
	}
	var changed []bucket
	for rows.Next() {
		var b bucket
		if err := rows.Scan(&b.list, &b.part, &b.data); err != nil {
			_ = rows.Close()
			return 0, err
		}
		for i := 0; i+fpEntrySize <= len(b.data); i += fpEntrySize {
			if binary.LittleEndian.Uint64(b.data[i:]) == h {
				b.data = append(b.data[:i:i], b.data[i+fpEntrySize:]...)
				changed = append(changed, b)
				break
			}
		}
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, b := range changed {
		if _, err := tx.ExecContext(ctx, "UPDATE subsync_fingerprint SET data = $4 WHERE list_id = $1 AND bucket = $2 AND part = $3",
			b.list, bucketOf(h), b.part, b.data); err != nil {
			return 0, err
		}
	}
	return n + int64(len(changed)), nil
}

// eraseStaged deletes the staged files whose content holds the address (case-insensitively).
func eraseStaged(ctx context.Context, _ *Store, tx *sql.Tx, email string) (int64, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, chunks FROM subsync_staged_file ORDER BY id")
	if err != nil {
		return 0, err
	}
	type file struct {
		id     int64
		chunks int
	}
	var files []file
	for rows.Next() {
		var f file
		if err := rows.Scan(&f.id, &f.chunks); err != nil {
			_ = rows.Close()
			return 0, err
		}
		files = append(files, f)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var n int64
	for _, f := range files {
		found, err := stagedHolds(ctx, tx, f.id, email)
		if err != nil {
			return 0, fmt.Errorf("staged file %d: %w", f.id, err)
		}
		if !found {
			continue
		}
		for _, q := range []string{"DELETE FROM subsync_staged_chunk WHERE file_id = $1", "DELETE FROM subsync_staged_file WHERE id = $1"} {
			if _, err := tx.ExecContext(ctx, q, f.id); err != nil {
				return 0, err
			}
		}
		n++
	}
	return n, nil
}

// stagedHolds reports whether the content of a staged file holds needle (lower case),
// case-insensitively.
func stagedHolds(ctx context.Context, tx *sql.Tx, id int64, needle string) (bool, error) {
	f, err := stagedFileInfo(ctx, tx, id)
	if err != nil {
		return false, err
	}
	rc, err := newStagedReader(ctx, tx, f)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	return readerContains(rc, needle)
}

// readerContains reports whether r holds needle (lower case), case-insensitively.
func readerContains(r io.Reader, needle string) (bool, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	keep := len(needle) - 1
	buf := make([]byte, 0, 1<<16+keep)
	chunk := make([]byte, 1<<16)
	for {
		n, err := br.Read(chunk)
		buf = append(buf, bytes.ToLower(chunk[:n])...)
		if bytes.Contains(buf, []byte(needle)) {
			return true, nil
		}
		if len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
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

// RunsInFlightSince counts the imports and syncs that began before t and are running now
// (their lease alive).
func (s *Store) RunsInFlightSince(ctx context.Context, t time.Time) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM subsync_run
WHERE kind IN ($1, $2) AND state = $3 AND started_at < $4 AND lease_until > `+s.d.nowExpr(),
		KindImport, KindSync, string(RunRunning), micros(t)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count running runs: %w", err)
	}
	return n, nil
}
