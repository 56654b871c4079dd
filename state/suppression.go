package state

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/subsync/subsync/sink"
)

// AllLists is the list id of a suppression that applies to every list.
const AllLists int64 = 0

// Suppression is one entry of the suppression list.
type Suppression struct {
	ListID    int64 // AllLists for every list
	Email     string
	Status    string // sink.StatusUnsubscribed or sink.StatusBounce
	ChangedAt time.Time
}

// StatusChange is one change of a subscriber's status reported by the service.
type StatusChange struct {
	Email        string
	Status       string
	StatusMobile string
	ListID       int64
	SubscriberID int64
	ChangedAt    time.Time
}

// Suppress adds entries to the suppression list (or updates them when newer).
func (s *Store) Suppress(ctx context.Context, entries []Suppression) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return suppressAll(ctx, tx, entries) })
}

// suppressAll records suppressions in tx, and bumps the suppression list's version if any
// changed it.
func suppressAll(ctx context.Context, tx *sql.Tx, entries []Suppression) error {
	changed := false
	for _, e := range entries {
		c, err := suppress(ctx, tx, e.ListID, e.Email, e.Status, e.ChangedAt)
		if err != nil {
			return err
		}
		changed = changed || c
	}
	if changed {
		return bumpSuppressionVersion(ctx, tx)
	}
	return nil
}

// suppress records one suppression; it reports whether the list changed.
func suppress(ctx context.Context, tx *sql.Tx, listID int64, email, status string, at time.Time) (bool, error) {
	if status != sink.StatusUnsubscribed && status != sink.StatusBounce {
		return false, fmt.Errorf("suppress: status %q is neither %q nor %q", status, sink.StatusUnsubscribed, sink.StatusBounce)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO subsync_suppression (list_id, email, status, changed_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (list_id, email) DO UPDATE SET status = excluded.status, changed_at = excluded.changed_at
WHERE subsync_suppression.changed_at <= excluded.changed_at`, listID, NormaliseEmail(email), status, micros(at))
	if err != nil {
		return false, fmt.Errorf("suppress: %w", err)
	}
	return affected(res)
}

// unsuppress lifts a suppression older than at; it reports whether the list changed.
func unsuppress(ctx context.Context, tx *sql.Tx, listID int64, email string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM subsync_suppression
WHERE list_id = $1 AND email = $2 AND changed_at <= $3`, listID, NormaliseEmail(email), micros(at))
	if err != nil {
		return false, fmt.Errorf("unsuppress: %w", err)
	}
	return affected(res)
}

func affected(res sql.Result) (bool, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("rows affected: %w", err)
	}
	return n > 0, nil
}

// suppressionCounter names the counter bumped by every change of the suppression list.
const suppressionCounter = "suppression"

func bumpSuppressionVersion(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, "UPDATE subsync_counter SET value = value + 1 WHERE name = $1",
		suppressionCounter); err != nil {
		return fmt.Errorf("bump suppression list version: %w", err)
	}
	return nil
}

// SuppressionVersion returns the version of the suppression list: a number that grows with
// every change of it, in the same transaction as the change. A run compares it with the
// version of the [SuppressionSet] it holds (one primary-key read) before every chunk of rows,
// and reloads the set only when it differs.
func (s *Store) SuppressionVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, "SELECT value FROM subsync_counter WHERE name = $1", suppressionCounter).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read suppression list version: %w", err)
	}
	return v, nil
}

// SuppressionSet is the suppression list a run into one list checks its rows against, in
// memory, by e-mail hash ([EmailHash]): every entry, whatever list it was recorded for, since
// a status is the person's, not a list's (a person who unsubscribed from or bounced in any
// list is never made active in another). It is immutable and safe for concurrent use.
//
// Two e-mails sharing a 64-bit hash (about 1 in 2^64 per pair) would make the second one
// count as suppressed: the safe side.
type SuppressionSet struct {
	listID  int64
	version int64
	status  map[uint64]string
	erased  *erasedSet // nil: nobody was erased
}

// Erased reports whether the address whose [EmailHash] is given belongs to a person erased by
// `subsync forget` (by the keyed hash subsync keeps of them): such a row is never sent again.
// It costs a map lookup when anybody was erased, nothing otherwise.
func (f *SuppressionSet) Erased(emailHash uint64) bool {
	return f.erased != nil && f.erased.has(emailHash)
}

// ListID is the list the set applies to.
func (f *SuppressionSet) ListID() int64 { return f.listID }

// Version is the suppression list's version the set was loaded at (see
// [Store.SuppressionVersion]); a set loaded at version v holds every change up to v.
func (f *SuppressionSet) Version() int64 { return f.version }

// Len is how many e-mails are suppressed.
func (f *SuppressionSet) Len() int { return len(f.status) }

// Status returns the suppressed status (sink.StatusUnsubscribed or sink.StatusBounce) of the e-mail
// whose hash is given, and whether it is suppressed.
func (f *SuppressionSet) Status(emailHash uint64) (string, bool) {
	st, ok := f.status[emailHash]
	return st, ok
}

// LoadSuppressions reads the suppressions that apply to a run into a list — every entry of
// the suppression list, whatever list it was recorded for (suppression is account-wide; the
// newest wins where two name an e-mail) — with the version they are current at.
func (s *Store) LoadSuppressions(ctx context.Context, listID int64) (*SuppressionSet, error) {
	// The version is read first: a change committed in between is then both in the rows and
	// newer than the version, so the set is merely reloaded once more.
	v, err := s.SuppressionVersion(ctx)
	if err != nil {
		return nil, err
	}
	f := &SuppressionSet{listID: listID, version: v, status: map[uint64]string{}}
	rows, err := s.db.QueryContext(ctx, `SELECT email, status FROM subsync_suppression ORDER BY changed_at`)
	if err != nil {
		return nil, fmt.Errorf("load suppressions of list %d: %w", listID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var email, st string
		if err := rows.Scan(&email, &st); err != nil {
			return nil, fmt.Errorf("load suppressions of list %d: %w", listID, err)
		}
		switch st { // share the constants rather than one string per row
		case sink.StatusUnsubscribed:
			st = sink.StatusUnsubscribed
		case sink.StatusBounce:
			st = sink.StatusBounce
		}
		f.status[EmailHash(email)] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load suppressions of list %d: %w", listID, err)
	}
	if f.erased, err = s.loadErased(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// SuppressionCount is how many e-mails one list has suppressed with one status.
type SuppressionCount struct {
	ListID int64 // AllLists for suppressions of every list
	Status string
	Count  int64
}

// SuppressionCounts counts the suppression list by list and status.
func (s *Store) SuppressionCounts(ctx context.Context) ([]SuppressionCount, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT list_id, status, COUNT(*) FROM subsync_suppression
GROUP BY list_id, status ORDER BY list_id, status`)
	if err != nil {
		return nil, fmt.Errorf("count suppressions: %w", err)
	}
	defer rows.Close()
	var out []SuppressionCount
	for rows.Next() {
		var c SuppressionCount
		if err := rows.Scan(&c.ListID, &c.Status, &c.Count); err != nil {
			return nil, fmt.Errorf("count suppressions: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count suppressions: %w", err)
	}
	return out, nil
}

// HasSuppressions reports whether any suppression applies to the list: any at all, since
// suppression is account-wide (see LoadSuppressions).
func (s *Store) HasSuppressions(ctx context.Context, listID int64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM subsync_suppression LIMIT 1) AS t`).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check suppressions of list %d: %w", listID, err)
	}
	return n > 0, nil
}

// Suppressed returns, for those of the e-mails that are suppressed for a run into the list
// (in any list: see LoadSuppressions), their status, the newest where several lists name
// one. Keys are normalised e-mails.
func (s *Store) Suppressed(ctx context.Context, listID int64, emails []string) (map[string]string, error) {
	out := map[string]string{}
	maxArgs := s.d.bulkRows()
	for len(emails) > 0 {
		n := min(len(emails), maxArgs)
		var b strings.Builder
		b.WriteString("SELECT email, status FROM subsync_suppression WHERE email IN (")
		args := make([]any, 0, n)
		for i, e := range emails[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			s.d.param(&b, i+1)
			args = append(args, NormaliseEmail(e))
		}
		b.WriteString(") ORDER BY changed_at")
		rows, err := s.db.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("read suppressions of list %d: %w", listID, err)
		}
		for rows.Next() {
			var e, st string
			if err := rows.Scan(&e, &st); err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("read suppressions of list %d: %w", listID, err)
			}
			out[e] = st
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read suppressions of list %d: %w", listID, err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read suppressions of list %d: %w", listID, err)
		}
		emails = emails[n:]
	}
	return out, nil
}
