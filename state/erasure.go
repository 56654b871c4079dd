package state

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

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
