package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Suppression statuses: a person in the suppression list is never made active by a sync.
const (
	StatusUnsubscribed = "unsubscribed"
	StatusBounce       = "bounce"
	StatusActive       = "active"
)

// AllLists is the list id of a suppression that applies to every list.
const AllLists int64 = 0

// Suppression is one entry of the suppression list.
type Suppression struct {
	ListID    int64 // AllLists for every list
	Email     string
	Status    string // StatusUnsubscribed or StatusBounce
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
	if status != StatusUnsubscribed && status != StatusBounce {
		return false, fmt.Errorf("suppress: status %q is neither %q nor %q", status, StatusUnsubscribed, StatusBounce)
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

// SuppressionSet is the suppression list of one list (its own entries and those for all
// lists) in memory, by e-mail hash ([EmailHash]). It is immutable and safe for concurrent use.
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

// Status returns the suppressed status (StatusUnsubscribed or StatusBounce) of the e-mail
// whose hash is given, and whether it is suppressed.
func (f *SuppressionSet) Status(emailHash uint64) (string, bool) {
	st, ok := f.status[emailHash]
	return st, ok
}

// LoadSuppressions reads the suppressions that apply to a list (its own and those for all
// lists; the newer wins where both name an e-mail), with the version they are current at.
func (s *Store) LoadSuppressions(ctx context.Context, listID int64) (*SuppressionSet, error) {
	// The version is read first: a change committed in between is then both in the rows and
	// newer than the version, so the set is merely reloaded once more.
	v, err := s.SuppressionVersion(ctx)
	if err != nil {
		return nil, err
	}
	f := &SuppressionSet{listID: listID, version: v, status: map[uint64]string{}}
	rows, err := s.db.QueryContext(ctx, `SELECT email, status FROM subsync_suppression
WHERE list_id IN ($1, 0) ORDER BY changed_at`, listID)
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
		case StatusUnsubscribed:
			st = StatusUnsubscribed
		case StatusBounce:
			st = StatusBounce
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

// HasSuppressions reports whether any suppression applies to the list (or to all lists).
func (s *Store) HasSuppressions(ctx context.Context, listID int64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM subsync_suppression
WHERE list_id IN ($1, 0) LIMIT 1) AS t`, listID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check suppressions of list %d: %w", listID, err)
	}
	return n > 0, nil
}

// Suppressed returns, for those of the e-mails that are suppressed in the list (or in all
// lists), their status. Keys are normalised e-mails.
func (s *Store) Suppressed(ctx context.Context, listID int64, emails []string) (map[string]string, error) {
	out := map[string]string{}
	maxArgs := s.d.bulkRows()
	for len(emails) > 0 {
		n := min(len(emails), maxArgs)
		var b strings.Builder
		b.WriteString("SELECT email, status FROM subsync_suppression WHERE list_id IN (")
		s.d.param(&b, 1)
		b.WriteString(", 0) AND email IN (")
		args := make([]any, 0, n+1)
		args = append(args, listID)
		for i, e := range emails[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			s.d.param(&b, i+2)
			args = append(args, NormaliseEmail(e))
		}
		b.WriteByte(')')
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

// RecordStatusChanges logs the changes not logged before (unique on e-mail, status, time and
// list), applies each new one to the suppression list (unsubscribed and bounce suppress, active
// lifts an older suppression), and queues a write-back of each new change for every target.
// All of it is one transaction; recording the same changes twice changes nothing the second
// time. It returns how many changes were new.
func (s *Store) RecordStatusChanges(ctx context.Context, changes []StatusChange, writeBackTargets []string) (int, error) {
	return s.recordChanges(ctx, changes, writeBackTargets, false)
}

// RecordReconciled is [Store.RecordStatusChanges] for what a reconciliation found (a list's
// subscribers read with a status of unsubscribed or bounce, whose times are those of the
// subscriber rather than of the change): a change whose e-mail is already suppressed in its
// list with the same status is not news and is left out, so a reconciliation only fills the
// gaps of the status feed and never writes a change back twice.
func (s *Store) RecordReconciled(ctx context.Context, changes []StatusChange, writeBackTargets []string) (int, error) {
	return s.recordChanges(ctx, changes, writeBackTargets, true)
}

func (s *Store) recordChanges(ctx context.Context, changes []StatusChange, writeBackTargets []string, reconciled bool) (int, error) {
	// An erased person's changes (the feed may list them for a while) are not recorded: their
	// address would be back in the change log.
	erased, err := s.loadErased(ctx)
	if err != nil {
		return 0, fmt.Errorf("record status changes: %w", err)
	}
	added := 0
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		added = 0
		changed := false
		for _, c := range changes {
			email := NormaliseEmail(c.Email)
			if erased != nil && erased.has(EmailHash(email)) {
				continue
			}
			if reconciled {
				var st string
				err := tx.QueryRowContext(ctx, "SELECT status FROM subsync_suppression WHERE list_id = $1 AND email = $2",
					c.ListID, email).Scan(&st)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("read suppression: %w", err)
				}
				if err == nil && st == c.Status {
					continue
				}
			}
			var id int64
			err := tx.QueryRowContext(ctx, `INSERT INTO subsync_status_change
    (email, status, status_mobile, list_id, subscriber_id, changed_at, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, `+s.d.nowExpr()+`)
ON CONFLICT (email, status, changed_at, list_id) DO NOTHING RETURNING id`,
				email, c.Status, c.StatusMobile, c.ListID, c.SubscriberID, micros(c.ChangedAt)).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("log status change: %w", err)
			}
			added++
			var ch bool
			switch c.Status {
			case StatusUnsubscribed, StatusBounce:
				ch, err = suppress(ctx, tx, c.ListID, email, c.Status, c.ChangedAt)
			case StatusActive:
				ch, err = unsuppress(ctx, tx, c.ListID, email, c.ChangedAt)
			}
			if err != nil {
				return err
			}
			changed = changed || ch
			for _, target := range writeBackTargets {
				if _, err := tx.ExecContext(ctx, `INSERT INTO subsync_writeback (change_id, target, created_at)
VALUES ($1, $2, `+s.d.nowExpr()+`) ON CONFLICT (change_id, target) DO NOTHING`, id, target); err != nil {
					return fmt.Errorf("queue write-back: %w", err)
				}
			}
		}
		if changed {
			return bumpSuppressionVersion(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record status changes: %w", err)
	}
	return added, nil
}

// StatusChanges returns logged changes for an e-mail (all e-mails when empty), oldest first.
func (s *Store) StatusChanges(ctx context.Context, email string, limit int) ([]StatusChange, error) {
	q := `SELECT email, status, status_mobile, list_id, subscriber_id, changed_at FROM subsync_status_change`
	args := []any{}
	if email != "" {
		q += " WHERE email = $1"
		args = append(args, NormaliseEmail(email))
	}
	if limit <= 0 {
		limit = 1000
	}
	args = append(args, limit)
	q += fmt.Sprintf(" ORDER BY changed_at, id LIMIT $%d", len(args))
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read status changes: %w", err)
	}
	defer rows.Close()
	var out []StatusChange
	for rows.Next() {
		var c StatusChange
		var at int64
		if err := rows.Scan(&c.Email, &c.Status, &c.StatusMobile, &c.ListID, &c.SubscriberID, &at); err != nil {
			return nil, fmt.Errorf("read status changes: %w", err)
		}
		c.ChangedAt = fromMicros(at)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read status changes: %w", err)
	}
	return out, nil
}

// StatusCursor returns the named cursor (the time up to which status changes were pulled),
// or the zero time when it was never set.
func (s *Store) StatusCursor(ctx context.Context, name string) (time.Time, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, "SELECT position FROM subsync_status_cursor WHERE name = $1", name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read status cursor %q: %w", name, err)
	}
	return fromMicros(v), nil
}

// AdvanceStatusCursor moves the named cursor to t; it never moves backwards.
func (s *Store) AdvanceStatusCursor(ctx context.Context, name string, t time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO subsync_status_cursor (name, position, updated_at)
VALUES ($1, $2, `+s.d.nowExpr()+`)
ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at
WHERE subsync_status_cursor.position < excluded.position`, name, micros(t))
	if err != nil {
		return fmt.Errorf("advance status cursor %q: %w", name, err)
	}
	return nil
}

// WriteBack is a status change still to be written back to a target (a source).
type WriteBack struct {
	ID        int64
	Target    string
	Change    StatusChange
	Attempts  int
	LastError string
}

// PendingWriteBacks returns up to limit pending write-backs for target, in the order the
// changes happened (oldest first), so that a later change of the same person is applied last.
func (s *Store) PendingWriteBacks(ctx context.Context, target string, limit int) ([]WriteBack, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.db.QueryContext(ctx, `SELECT w.id, w.target, w.attempts, w.last_error,
    c.email, c.status, c.status_mobile, c.list_id, c.subscriber_id, c.changed_at
FROM subsync_writeback w JOIN subsync_status_change c ON c.id = w.change_id
WHERE w.target = $1 AND w.state = 'pending' ORDER BY c.changed_at, w.id LIMIT $2`, target, limit)
	if err != nil {
		return nil, fmt.Errorf("read write-backs for %q: %w", target, err)
	}
	defer rows.Close()
	var out []WriteBack
	for rows.Next() {
		var w WriteBack
		var at int64
		if err := rows.Scan(&w.ID, &w.Target, &w.Attempts, &w.LastError, &w.Change.Email, &w.Change.Status,
			&w.Change.StatusMobile, &w.Change.ListID, &w.Change.SubscriberID, &at); err != nil {
			return nil, fmt.Errorf("read write-backs for %q: %w", target, err)
		}
		w.Change.ChangedAt = fromMicros(at)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read write-backs for %q: %w", target, err)
	}
	return out, nil
}

// CompleteWriteBack marks a write-back done (writeErr nil) or records a failed attempt.
func (s *Store) CompleteWriteBack(ctx context.Context, id int64, writeErr error) error {
	return s.CompleteWriteBacks(ctx, []int64{id}, writeErr)
}

// CompleteWriteBacks marks write-backs done (writeErr nil), or records a failed attempt of
// each, with the error's message, leaving them pending; one transaction.
func (s *Store) CompleteWriteBacks(ctx context.Context, ids []int64, writeErr error) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		q := `UPDATE subsync_writeback SET state = 'done', attempts = attempts + 1, last_error = '',
    done_at = ` + s.d.nowExpr() + ` WHERE id = $1`
		var msg string
		if writeErr != nil {
			q = `UPDATE subsync_writeback SET attempts = attempts + 1, last_error = $2 WHERE id = $1 AND state = 'pending'`
			msg = writeErr.Error()
		}
		stmt, err := tx.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, id := range ids {
			args := []any{id}
			if writeErr != nil {
				args = append(args, msg)
			}
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("complete %d write-backs: %w", len(ids), err)
	}
	return nil
}

// WriteBackSummary is where the write-backs to one target stand.
type WriteBackSummary struct {
	Target  string
	Pending int64 // changes not yet written back
	Failing int64 // pending ones that failed at least once
	Done    int64
	// OldestPending is when the oldest pending change happened (zero when none is pending).
	OldestPending time.Time
	// LastError is the error of the latest failed attempt of a pending write-back.
	LastError string
}

// WriteBackSummaries summarises the write-backs of every target that ever had one.
func (s *Store) WriteBackSummaries(ctx context.Context) ([]WriteBackSummary, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT w.target,
    SUM(CASE WHEN w.state = 'pending' THEN 1 ELSE 0 END),
    SUM(CASE WHEN w.state = 'pending' AND w.attempts > 0 THEN 1 ELSE 0 END),
    SUM(CASE WHEN w.state = 'done' THEN 1 ELSE 0 END),
    COALESCE(MIN(CASE WHEN w.state = 'pending' THEN c.changed_at END), 0)
FROM subsync_writeback w JOIN subsync_status_change c ON c.id = w.change_id
GROUP BY w.target ORDER BY w.target`)
	if err != nil {
		return nil, fmt.Errorf("summarise write-backs: %w", err)
	}
	var out []WriteBackSummary
	for rows.Next() {
		var w WriteBackSummary
		var oldest int64
		if err := rows.Scan(&w.Target, &w.Pending, &w.Failing, &w.Done, &oldest); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("summarise write-backs: %w", err)
		}
		w.OldestPending = fromMicros(oldest)
		out = append(out, w)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("summarise write-backs: %w", err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("summarise write-backs: %w", err)
	}
	for i := range out {
		if out[i].Failing == 0 {
			continue
		}
		err := s.db.QueryRowContext(ctx, `SELECT last_error FROM subsync_writeback
WHERE target = $1 AND state = 'pending' AND attempts > 0 ORDER BY id DESC LIMIT 1`, out[i].Target).Scan(&out[i].LastError)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("summarise write-backs: %w", err)
		}
	}
	return out, nil
}
