package state

import (
	"context"
	"database/sql"
	"fmt"
)

// Fingerprint is the last acknowledged payload of one subscriber, as three 8-byte hashes.
type Fingerprint struct {
	Email   uint64 // EmailHash of the e-mail
	Payload uint64 // the hash of what was sent (the payload and the status it was sent with)
	// Source is the hash of the source values the payload was mapped from (the caller's
	// choice; 0 = none): a row whose source values hash the same maps to the same payload,
	// so it can be found unchanged without mapping it.
	Source uint64
}

// FingerprintBuckets is how many buckets the fingerprints of one list are spread over (by
// the top bits of the e-mail hash). Each bucket is a few rows (its parts, see
// SaveFingerprints), each holding a sorted array of 24-byte entries, so a million
// fingerprints are 4096 buckets of about 6 KB: loading or saving them is one pass over 24 MB,
// not a million index updates.
const FingerprintBuckets = 4096

const fpEntrySize = 24

func bucketOf(email uint64) int { return int(email >> 52) } // top 12 bits: 0..4095

// HasFingerprints reports whether any fingerprint is recorded for the list.
func (s *Store) HasFingerprints(ctx context.Context, listID int64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM subsync_fingerprint WHERE list_id = $1
UNION ALL SELECT 1 FROM subsync_fingerprint_recent WHERE list_id = $1 LIMIT 1) AS t`, listID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check fingerprints of list %d: %w", listID, err)
	}
	return n > 0, nil
}

// ForgetFingerprints deletes the fingerprints of a list, so the next sync sends every row.
func (s *Store) ForgetFingerprints(ctx context.Context, listID int64) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, table := range []string{"subsync_fingerprint", "subsync_fingerprint_recent"} {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE list_id = $1", listID); err != nil {
				return fmt.Errorf("forget fingerprints of list %d: %w", listID, err)
			}
		}
		return nil
	})
}

// FingerprintCount is about how many fingerprints the list has (its buckets' entries plus its
// recent changes, some of which replace a bucket's entry), without loading them.
func (s *Store) FingerprintCount(ctx context.Context, listID int64) (int64, error) {
	var bytes, recent int64
	err := s.db.QueryRowContext(ctx, `SELECT
    (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM subsync_fingerprint WHERE list_id = $1),
    (SELECT COUNT(*) FROM subsync_fingerprint_recent WHERE list_id = $1)`, listID).Scan(&bytes, &recent)
	if err != nil {
		return 0, fmt.Errorf("count fingerprints of list %d: %w", listID, err)
	}
	return bytes/fpEntrySize + recent, nil
}
