package state

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// recentMin is how many recent changes of a list's fingerprints are kept beside its buckets
// at least; the limit grows with the list (recentShare of its fingerprints).
const (
	recentMin   = 20_000
	recentShare = 16
)

// maxParts is how many parts a bucket may have; a save that would make more merges the newer
// ones into one (folder.parts).
const maxParts = 8

// SaveFingerprints writes the set's pending fingerprints in one transaction, and clears them.
//
// A list's stored fingerprints are its buckets, each in parts (rows of sorted entries, a
// later part's entry for an e-mail replacing an earlier one's), and its recent changes (a row
// a fingerprint, newer than every part). A few changes (a sync where 1% of the rows changed)
// are upserted into the recent changes: writing them costs what they are, where adding to the
// buckets they fall in would touch nearly all of them. More (an import, saving every
// FingerprintFlush rows) are written as a new part of each bucket they fall in, together with
// the recent changes, which are then cleared: a save writes what it saves, once, where
// merging it into the buckets rewrote everything saved before (saving a million rows in four
// parts wrote 60 MB, not 24). A bucket that would have more than maxParts parts has its newer
// ones merged into one by that save (reading them, so a concurrent run's entries are kept;
// see mergedFrom for which).
//
// It is not fenced by a lease: a fingerprint states what the service holds, whoever sent
// it. A fingerprint lost (a crash before the save) only makes the next sync send that row
// again.
func (s *Store) SaveFingerprints(ctx context.Context, f *FingerprintSet) error {
	return s.SaveFingerprintsStepped(ctx, f, nil)
}

// saveStepBuckets is how many buckets a step of SaveFingerprintsStepped writes: a sixteenth
// of the set, a few milliseconds on SQLite for an import's save of 250,000 fingerprints.
const saveStepBuckets = FingerprintBuckets / 16

// SaveFingerprintsStepped saves as SaveFingerprints does, except that a save that appends
// parts with no recent changes to fold in (an import's, or a first sync's, every
// FingerprintFlush rows) is written in steps of saveStepBuckets buckets, a transaction each,
// with a call of between (unless nil) after each step. A run writes its checkpoints there:
// a save of 250,000 fingerprints holds the database for about 70 ms on SQLite, and the
// window of batches in flight would wait for it all that time.
//
// between may Add fingerprints: those that fall in a bucket already written stay pending for
// the next save, the others are written by the steps still to come. A crash between steps
// loses the fingerprints of the buckets not yet written, as a crash before the save would.
func (s *Store) SaveFingerprintsStepped(ctx context.Context, f *FingerprintSet, between func()) error {
	if f.npending == 0 {
		return nil
	}
	stepped := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var recent int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_fingerprint_recent WHERE list_id = $1",
			f.listID).Scan(&recent); err != nil {
			return err
		}
		if recent+f.npending <= max(recentMin, f.n/recentShare) {
			return s.saveRecent(ctx, tx, f.listID, f.allPending())
		}
		if recent == 0 && between != nil {
			stepped = true
			return nil
		}
		// The recent changes, older than the pending ones, are folded in a half at a time, or
		// a few buckets at a time for a set beyond its memory budget (they are up to a
		// sixteenth of the list).
		step := FingerprintBuckets / 2
		if f.Spilled() {
			step = recentStepBuckets
		}
		for from := 0; from < FingerprintBuckets; from += step {
			var old []Fingerprint
			if recent > 0 {
				var err error
				if old, err = recentOfBuckets(ctx, tx, f.listID, from, from+step); err != nil {
					return err
				}
			}
			if err := saveParts(ctx, tx, s.d, f, old, from, from+step); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM subsync_fingerprint_recent WHERE list_id = $1", f.listID)
		return err
	})
	if err != nil {
		return fmt.Errorf("save fingerprints of list %d: %w", f.listID, err)
	}
	if !stepped {
		f.clearPending(0, FingerprintBuckets)
		return nil
	}
	for from := 0; from < FingerprintBuckets; from += saveStepBuckets {
		to := from + saveStepBuckets
		if err := s.saveStep(ctx, f, from, to); err != nil {
			return fmt.Errorf("save fingerprints of list %d (buckets %d to %d): %w", f.listID, from, to-1, err)
		}
		f.clearPending(from, to)
		between() // stepped only with a between
	}
	return nil
}

// SavesBeside reports whether a fingerprint save may go on while the run's checkpoints are
// written: on Postgres, where they use other connections and other rows. On SQLite, one
// writer at a time, a checkpoint would wait for the save's transaction.
func (s *Store) SavesBeside() bool { return s.d == Postgres }

// saveStep writes the pending fingerprints of buckets [from, to) as new parts. On Postgres,
// unless a bucket's parts are to be merged, it reads how many parts the buckets have, then
// sends the inserts together (one round trip; the server runs them as one transaction, see
// checkpointPipelined): two round trips where a transaction took seven, during which the
// run's checkpoints wait.
func (s *Store) saveStep(ctx context.Context, f *FingerprintSet, from, to int) error {
	if s.d == Postgres {
		have, err := bucketParts(ctx, s.db, f.listID, from, to)
		if err != nil {
			return err
		}
		if !f.folds(have, from, to) {
			return s.withPgx(ctx, func(conn *pgx.Conn) error { return copyParts(ctx, conn, f, have, from, to) })
		}
	}
	return s.inTx(ctx, func(tx *sql.Tx) error { return saveParts(ctx, tx, s.d, f, nil, from, to) })
}

// copyParts writes the pending fingerprints of buckets [from, to), none of which folds, as a
// new part of each bucket they fall in, with one COPY (one statement: all or nothing). The
// driver encodes each part into a buffer it reuses as it sends: inserts with the parts as
// parameters made it copy them into buffers grown for each statement, nine times the bytes
// saved allocated (BenchmarkImportSaves).
func copyParts(ctx context.Context, conn *pgx.Conn, f *FingerprintSet, have []parts, from, to int) error {
	var part []byte
	row := []any{f.listID, 0, 0, nil}
	bucket := from - 1
	rows := pgx.CopyFromFunc(func() ([]any, error) {
		for bucket++; bucket < to; bucket++ {
			if f.pending == nil || len(f.pending[bucket]) == 0 {
				continue
			}
			part = mergeBucket(part[:0], nil, f.sortedPending(bucket))
			row[1], row[2], row[3] = bucket, have[bucket].next(), part // encoded before the next row is asked for
			return row, nil
		}
		return nil, nil
	})
	_, err := conn.CopyFrom(ctx, pgx.Identifier{"subsync_fingerprint"}, []string{"list_id", "bucket", "part", "data"}, rows)
	return err
}

// folds reports whether saving the pending fingerprints of buckets [from, to) merges a
// bucket's parts (it has maxParts already).
func (f *FingerprintSet) folds(have []parts, from, to int) bool {
	for b := from; b < to; b++ {
		if f.pending != nil && len(f.pending[b]) > 0 && have[b].n+1 > maxParts {
			return true
		}
	}
	return false
}

// saveRecent upserts sorted fingerprints (later duplicates winning) into the recent changes.
func (s *Store) saveRecent(ctx context.Context, tx *sql.Tx, listID int64, fps []Fingerprint) error {
	const cols = 4
	maxRows := s.d.bulkRows()
	args := make([]any, 0, maxRows*cols)
	for len(fps) > 0 {
		args = args[:0]
		n := 0
		for n < len(fps) && len(args) < maxRows*cols {
			if n+1 < len(fps) && fps[n+1].Email == fps[n].Email {
				n++ // a later entry for the same e-mail wins (one statement must not name it twice)
				continue
			}
			args = append(args, listID, int64(fps[n].Email), int64(fps[n].Payload), int64(fps[n].Source))
			n++
		}
		var b strings.Builder
		b.WriteString("INSERT INTO subsync_fingerprint_recent (list_id, email, payload, source) VALUES ")
		s.d.placeholders(&b, len(args)/cols, cols, 1)
		b.WriteString(" ON CONFLICT (list_id, email) DO UPDATE SET payload = excluded.payload, source = excluded.source")
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
		fps = fps[n:]
	}
	return nil
}

// saveParts writes, for the buckets [from, to), the recent changes old (sorted by e-mail
// hash, later duplicates winning; all in those buckets) and then the pending fingerprints of f
// as a new part of each bucket they fall in (see writeParts).
func saveParts(ctx context.Context, tx *sql.Tx, d Dialect, f *FingerprintSet, old []Fingerprint, from, to int) error {
	have, err := bucketParts(ctx, tx, f.listID, from, to)
	if err != nil {
		return err
	}
	return writeParts(ctx, tx, d, f, old, have, from, to)
}

// parts is how many parts a bucket has (n) and the number of its last.
type parts struct{ n, last int }

// next is the number of the bucket's next part: one more than its last, 0 for its first.
func (p parts) next() int {
	if p.n == 0 {
		return 0
	}
	return p.last + 1
}

// bucketParts reads the parts the buckets [from, to) of a list have, indexed by bucket.
func bucketParts(ctx context.Context, q querier, listID int64, from, to int) ([]parts, error) {
	have := make([]parts, FingerprintBuckets)
	rows, err := q.QueryContext(ctx, `SELECT bucket, COUNT(*), MAX(part) FROM subsync_fingerprint
WHERE list_id = $1 AND bucket >= $2 AND bucket < $3 GROUP BY bucket`, listID, from, to)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var b int
		var p parts
		if err := rows.Scan(&b, &p.n, &p.last); err != nil {
			_ = rows.Close()
			return nil, err
		}
		if b >= 0 && b < FingerprintBuckets {
			have[b] = p
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	return have, rows.Err()
}

// writeParts writes, for the buckets [from, to) whose parts are have, the recent changes old
// and then the pending fingerprints of f as a new part of each bucket they fall in, one
// bucket at a time, partsPerInsert parts a statement; a bucket with maxParts parts has its
// newer ones merged with the new one into one (folder.parts).
func writeParts(ctx context.Context, tx *sql.Tx, d Dialect, f *FingerprintSet, old []Fingerprint, have []parts, from, to int) error {
	const cols = 4
	var buf []byte // the parts of the next statement, one after the other
	var args []any // list, bucket, part and the end of the part's data in buf, a part at a time
	insert := func() error {
		if len(args) == 0 {
			return nil
		}
		start := 0
		for i := cols - 1; i < len(args); i += cols {
			end := args[i].(int)
			args[i] = buf[start:end]
			start = end
		}
		var b strings.Builder
		b.WriteString("INSERT INTO subsync_fingerprint (list_id, bucket, part, data) VALUES ")
		d.placeholders(&b, len(args)/cols, cols, 1)
		_, err := tx.ExecContext(ctx, b.String(), args...)
		args, buf = args[:0], buf[:0]
		return err
	}
	var part, merged []byte
	oldIn := make([]bool, to-from) // the buckets old has changes of
	for _, fp := range old {
		if b := bucketOf(fp.Email); b >= from && b < to {
			oldIn[b-from] = true
		}
	}
	fold := folder{from: from, to: to, d: d, have: have, writes: func(b int) bool {
		return oldIn[b-from] || (f.pending != nil && len(f.pending[b]) > 0)
	}}
	defer fold.close()
	for bucket := from; bucket < to; bucket++ {
		end := 0
		for end < len(old) && bucketOf(old[end].Email) == bucket {
			end++
		}
		fresh := old[:end]
		old = old[end:]
		if len(fresh) == 0 && (f.pending == nil || len(f.pending[bucket]) == 0) {
			continue
		}
		merged = appendSorted(merged[:0], fresh)
		part = mergeBucket(part[:0], merged, f.sortedPending(bucket))
		if have[bucket].n+1 > maxParts {
			var err error
			if buf, err = fold.parts(ctx, tx, f.listID, bucket, buf, part); err != nil {
				return err
			}
		} else {
			buf = append(buf, part...)
		}
		args = append(args, f.listID, bucket, have[bucket].next(), len(buf))
		if len(args) == partsPerInsert*cols || len(buf) >= maxInsertBytes {
			if err := insert(); err != nil {
				return err
			}
		}
	}
	return insert()
}

// maxInsertBytes ends a statement of parts once its data reaches it, so that what a save
// holds (and what the driver copies to encode it) does not grow with the list: a step that
// merges a bucket's parts writes the whole bucket, 58 KB a bucket of a ten-million-row list,
// and 64 of them made statements of 3.7 MB.
var maxInsertBytes = 1 << 20

// partsPerInsert is how many parts saveParts writes a statement.
const partsPerInsert = 64
