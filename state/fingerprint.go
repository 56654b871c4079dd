package state

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// Fingerprint is the last acknowledged payload of one subscriber in one list, as two 8-byte
// hashes: a million subscribers cost about 24 MB of table, not their payloads.
type Fingerprint struct {
	ListID  int64
	Email   uint64 // EmailHash of the e-mail
	Payload uint64 // PayloadHash of what was sent
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// NormaliseEmail is the form e-mails are compared in: trimmed and lower-cased, as the
// service matches them.
func NormaliseEmail(email string) string {
	email = strings.TrimSpace(email)
	for i := 0; i < len(email); i++ {
		if c := email[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(email)
		}
	}
	return email
}

// EmailHash is the 64-bit FNV-1a hash of the normalised e-mail. Two e-mails that collide
// cost at most an unnecessary send: the payload hash covers the e-mail itself.
func EmailHash(email string) uint64 {
	return fnvString(fnvOffset, NormaliseEmail(email))
}

// PayloadHash is the 64-bit FNV-1a hash of everything that decides what a push does: the
// mapping's fingerprint (so a changed mapping sends everything again), the statuses the row
// is sent with, and the encoded payload.
func PayloadHash(mappingFingerprint, status, statusMobile string, payload []byte) uint64 {
	h := fnvString(fnvOffset, mappingFingerprint)
	h = fnvString(h^0xff, status)
	h = fnvString(h^0xfe, statusMobile)
	return fnvBytes(h^0xfd, payload)
}

// RecordFingerprints records the fingerprints of acknowledged rows; for an e-mail given twice
// in one list, the later entry wins. It is not fenced by a lease: a fingerprint states what
// the service holds, whoever sent it. Writing many at once is much cheaper than a few at a
// time (random keys dirty one page each), so callers buffer them: a fingerprint lost in a
// crash only makes the next sync send that row again.
func (s *Store) RecordFingerprints(ctx context.Context, fps []Fingerprint) error {
	if len(fps) == 0 {
		return nil
	}
	return s.inTx(ctx, func(tx *sql.Tx) error { return upsertFingerprints(ctx, tx, s.d, fps) })
}

// upsertFingerprints records fps; for an e-mail given twice in one list, the later entry wins.
func upsertFingerprints(ctx context.Context, tx *sql.Tx, d Dialect, fps []Fingerprint) error {
	if len(fps) == 0 {
		return nil
	}
	type key struct {
		list  int64
		email uint64
	}
	last := make(map[key]int, len(fps))
	for i, f := range fps {
		last[key{f.ListID, f.Email}] = i
	}
	uniq := make([]Fingerprint, 0, len(last))
	for i, f := range fps {
		if last[key{f.ListID, f.Email}] == i {
			uniq = append(uniq, f)
		}
	}
	// Key order keeps consecutive inserts on neighbouring B-tree pages.
	slices.SortFunc(uniq, func(a, b Fingerprint) int {
		if c := cmp.Compare(a.ListID, b.ListID); c != 0 {
			return c
		}
		return cmp.Compare(int64(a.Email), int64(b.Email))
	})
	const cols = 3
	maxRows := d.bulkRows()
	for len(uniq) > 0 {
		n := min(len(uniq), maxRows)
		var b strings.Builder
		b.Grow(40 + n*16)
		b.WriteString("INSERT INTO subsync_fingerprint (list_id, email_hash, payload_hash) VALUES ")
		d.placeholders(&b, n, cols, 1)
		b.WriteString(" ON CONFLICT (list_id, email_hash) DO UPDATE SET payload_hash = excluded.payload_hash")
		args := make([]any, 0, n*cols)
		for _, f := range uniq[:n] {
			args = append(args, f.ListID, int64(f.Email), int64(f.Payload))
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("record fingerprints: %w", err)
		}
		uniq = uniq[n:]
	}
	return nil
}

// HasFingerprints reports whether any fingerprint is recorded for the list. A sync to a list
// without any skips the lookups.
func (s *Store) HasFingerprints(ctx context.Context, listID int64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM (SELECT 1 FROM subsync_fingerprint WHERE list_id = $1 LIMIT 1) AS t", listID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check fingerprints of list %d: %w", listID, err)
	}
	return n > 0, nil
}

// Fingerprints returns the recorded payload hash for each of the given e-mail hashes that
// has one in the list.
func (s *Store) Fingerprints(ctx context.Context, listID int64, emails []uint64) (map[uint64]uint64, error) {
	out := make(map[uint64]uint64, len(emails))
	maxArgs := s.d.bulkRows()
	for len(emails) > 0 {
		n := min(len(emails), maxArgs)
		var b strings.Builder
		b.WriteString("SELECT email_hash, payload_hash FROM subsync_fingerprint WHERE list_id = ")
		s.d.param(&b, 1)
		b.WriteString(" AND email_hash IN (")
		args := make([]any, 0, n+1)
		args = append(args, listID)
		for i, e := range emails[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			s.d.param(&b, i+2)
			args = append(args, int64(e))
		}
		b.WriteByte(')')
		if err := s.scanPairs(ctx, b.String(), args, out); err != nil {
			return nil, fmt.Errorf("read fingerprints of list %d: %w", listID, err)
		}
		emails = emails[n:]
	}
	return out, nil
}

func (s *Store) scanPairs(ctx context.Context, q string, args []any, out map[uint64]uint64) error {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v int64
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		out[uint64(k)] = uint64(v)
	}
	return rows.Err()
}

// ForgetFingerprints deletes the fingerprints of a list, so the next sync sends every row.
func (s *Store) ForgetFingerprints(ctx context.Context, listID int64) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM subsync_fingerprint WHERE list_id = $1", listID); err != nil {
		return fmt.Errorf("forget fingerprints of list %d: %w", listID, err)
	}
	return nil
}
