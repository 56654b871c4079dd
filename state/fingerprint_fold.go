package state

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// folder merges a bucket's newer parts with its new one (parts), for the buckets [from, to)
// of a save's step, keeping its statements and buffers from one bucket to the next. Close
// it once the step is written.
type folder struct {
	from, to int
	d        Dialect
	have     []parts        // the parts of each bucket, by bucket (bucketParts)
	writes   func(int) bool // whether the step writes a bucket
	nums     [][]int        // the numbers of each bucket's parts, oldest first, once read (nil: not yet)
	read     *sql.Stmt      // a bucket's parts from one number to another, in order (SQLite)
	del      *sql.Stmt      // deletes them (SQLite)
	data     []byte         // the parts merged, one after the other
	ends     []int          // where each part ends in data
	taken    []takenPart    // the parts taken from the buckets before upTo, by bucket and number (Postgres)
	takenBuf []byte         // their data
	upTo     int            // the first bucket whose parts are not taken yet (Postgres)
}

// takenPart is a part deleted to be merged: its bucket, number and data in takenBuf.
type takenPart struct{ bucket, part, start, end int }

// foldGroup is how many buckets' parts to merge one statement takes on Postgres: a round
// trip for 32 buckets where reading and deleting each bucket's took two (a save that merges
// made 8,192 round trips), and at most about 2 MB of parts at a time (a bucket of a
// ten-million-row list is about 58 KB).
const foldGroup = 32

// parts deletes the newer of a bucket's stored parts (those mergedFrom chooses) and appends
// them to dst merged, oldest first, with newest (sorted entries) last, into one part that
// replaces them: the caller writes it as the bucket's next part, after those kept.
//
// The parts are read into one buffer and merged in one pass (mergeParts), where merging each
// part into the ones before it in turn allocated and copied the bucket once a part.
func (fd *folder) parts(ctx context.Context, tx *sql.Tx, listID int64, bucket int, dst, newest []byte) ([]byte, error) {
	if err := fd.prepare(ctx, tx, listID); err != nil {
		return nil, err
	}
	nums := fd.nums[bucket-fd.from]
	kept := mergedFrom(nums, fd.have[bucket].next())
	if kept == len(nums) {
		return nil, fmt.Errorf("bucket %d: %d parts, expected %d", bucket, len(nums), fd.have[bucket].n)
	}
	fd.data, fd.ends = fd.data[:0], fd.ends[:0]
	var err error
	if fd.d == Postgres {
		err = fd.takeOf(ctx, tx, listID, bucket)
	} else {
		err = fd.readAndDelete(ctx, listID, bucket, nums[kept], nums[len(nums)-1])
	}
	if err != nil {
		return nil, err
	}
	if len(fd.ends) != len(nums)-kept {
		return nil, fmt.Errorf("bucket %d: %d parts to merge, read %d", bucket, len(nums)-kept, len(fd.ends))
	}
	fd.data = append(fd.data, newest...)
	fd.ends = append(fd.ends, len(fd.data))
	return mergeParts(slices.Grow(dst, len(fd.data)), fd.data, fd.ends), nil
}

// readAndDelete reads a bucket's parts numbered first to last into data, in order, and
// deletes them (SQLite: a statement costs no round trip).
func (fd *folder) readAndDelete(ctx context.Context, listID int64, bucket, first, last int) error {
	rows, err := fd.read.QueryContext(ctx, listID, bucket, first, last)
	if err != nil {
		return err
	}
	for rows.Next() {
		var data sql.RawBytes
		if err := rows.Scan(&data); err != nil {
			_ = rows.Close()
			return err
		}
		if err := fd.add(bucket, data); err != nil {
			_ = rows.Close()
			return err
		}
	}
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		return err
	}
	_, err = fd.del.ExecContext(ctx, listID, bucket, first, last)
	return err
}

// add appends a part of a bucket to those to merge.
func (fd *folder) add(bucket int, data []byte) error {
	if len(data)%fpEntrySize != 0 {
		return fmt.Errorf("bucket %d is malformed", bucket)
	}
	fd.data = append(fd.data, data...)
	fd.ends = append(fd.ends, len(fd.data))
	return nil
}

// takeOf puts a bucket's taken parts in data, in order, first taking (deleting and
// returning) the parts to merge of the next foldGroup buckets that merge unless the bucket's
// are taken already (Postgres).
func (fd *folder) takeOf(ctx context.Context, tx *sql.Tx, listID int64, bucket int) error {
	if bucket >= fd.upTo {
		if err := fd.take(ctx, tx, listID, bucket); err != nil {
			return err
		}
	}
	i, _ := slices.BinarySearchFunc(fd.taken, bucket, func(t takenPart, b int) int { return t.bucket - b })
	for ; i < len(fd.taken) && fd.taken[i].bucket == bucket; i++ {
		if err := fd.add(bucket, fd.takenBuf[fd.taken[i].start:fd.taken[i].end]); err != nil {
			return err
		}
	}
	return nil
}

// take deletes the parts to merge of the next foldGroup buckets that merge, from bucket on,
// and keeps them in taken, in one round trip.
func (fd *folder) take(ctx context.Context, tx *sql.Tx, listID int64, bucket int) error {
	var buckets, nums []int32
	groups := 0
	for b := bucket; b < fd.to && groups < foldGroup; b++ {
		fd.upTo = b + 1
		if fd.have[b].n+1 <= maxParts || !fd.writes(b) {
			continue
		}
		groups++
		ns := fd.nums[b-fd.from]
		for _, n := range ns[mergedFrom(ns, fd.have[b].next()):] {
			buckets, nums = append(buckets, int32(b)), append(nums, int32(n))
		}
	}
	rows, err := tx.QueryContext(ctx, `DELETE FROM subsync_fingerprint AS f USING unnest($2::int[], $3::int[]) AS m(bucket, part)
WHERE f.list_id = $1 AND f.bucket = m.bucket AND f.part = m.part RETURNING f.bucket, f.part, f.data`, listID, buckets, nums)
	if err != nil {
		return err
	}
	fd.taken, fd.takenBuf = fd.taken[:0], fd.takenBuf[:0]
	for rows.Next() {
		var t takenPart
		var data sql.RawBytes
		if err := rows.Scan(&t.bucket, &t.part, &data); err != nil {
			_ = rows.Close()
			return err
		}
		t.start = len(fd.takenBuf)
		fd.takenBuf = append(fd.takenBuf, data...)
		t.end = len(fd.takenBuf)
		fd.taken = append(fd.taken, t)
	}
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		return err
	}
	slices.SortFunc(fd.taken, func(a, b takenPart) int { return cmp.Or(a.bucket-b.bucket, a.part-b.part) })
	return nil
}

// prepare reads the numbers of the parts of the step's buckets and, on SQLite, prepares the
// statements, for the first bucket merged.
func (fd *folder) prepare(ctx context.Context, tx *sql.Tx, listID int64) error {
	if fd.nums != nil {
		return nil
	}
	nums, err := partNumbers(ctx, tx, listID, fd.from, fd.to)
	if err != nil {
		return err
	}
	if fd.d == SQLite {
		if fd.read, err = tx.PrepareContext(ctx, `SELECT data FROM subsync_fingerprint
WHERE list_id = $1 AND bucket = $2 AND part >= $3 AND part <= $4 ORDER BY part`); err != nil {
			return err
		}
		if fd.del, err = tx.PrepareContext(ctx, `DELETE FROM subsync_fingerprint
WHERE list_id = $1 AND bucket = $2 AND part >= $3 AND part <= $4`); err != nil {
			return err
		}
	}
	fd.nums = nums
	return nil
}

// close closes the folder's statements.
func (fd *folder) close() error {
	var err error
	for _, s := range []*sql.Stmt{fd.read, fd.del} {
		if s != nil {
			err = errors.Join(err, s.Close())
		}
	}
	return err
}

// mergedFrom returns how many of a bucket's stored parts (nums: their numbers, oldest first)
// a new part numbered next leaves as they are: the others, the newer ones, are merged with
// it into one. A part's number is one more than the last's when it was written, merged or
// not, so the numbers a part is ahead of the part before it are the saves it holds: its
// weight. The parts are merged from the newest on while the next older one weighs no more
// than those merged so far (and as many as keep the bucket within maxParts parts).
//
// An import's saves, a part each, make a bucket's parts about 9, 8, 7, 6, ... saves large:
// each merge rewrites the parts of the saves since the last merge, and the older parts only
// when they are not larger, where merging every part rewrote the whole bucket each time (a
// ten-million-row import, 40 saves of 250,000 rows, rewrote 84 saves' fingerprints; 39 now).
func mergedFrom(nums []int, next int) int {
	n := len(nums)
	least := n + 2 - maxParts // parts merged at least, the new one counted
	k := n
	weight := func(i int) int {
		if i == 0 {
			return nums[0] + 1
		}
		return nums[i] - nums[i-1]
	}
	merged := 1 // the new part's weight: next - nums[n-1]
	if n > 0 {
		merged = next - nums[n-1]
	}
	for k > 0 && (n-k+1 < least || weight(k-1) <= merged) {
		k--
		merged += weight(k)
	}
	return k
}

// partNumbers reads the numbers of the parts of the buckets [from, to) of a list, oldest
// first, indexed by bucket - from (from the primary key's index alone).
func partNumbers(ctx context.Context, q querier, listID int64, from, to int) ([][]int, error) {
	nums := make([][]int, to-from)
	rows, err := q.QueryContext(ctx, `SELECT bucket, part FROM subsync_fingerprint
WHERE list_id = $1 AND bucket >= $2 AND bucket < $3 ORDER BY bucket, part`, listID, from, to)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var b, part int
		if err := rows.Scan(&b, &part); err != nil {
			_ = rows.Close()
			return nil, err
		}
		if b >= from && b < to {
			nums[b-from] = append(nums[b-from], part)
		}
	}
	if err := errors.Join(rows.Close(), rows.Err()); err != nil {
		return nil, err
	}
	return nums, nil
}
