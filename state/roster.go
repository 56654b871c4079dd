package state

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The roster of a sync is who it delivered to its list: one row per address it sent (and the
// service acknowledged) or found unchanged since the last push, with the source key the row
// carried (a CRM id, sent as external_id; "" without one). It is kept only for a sync that
// removes people who left its source, or whose mapping has a key column; it is written in the
// checkpoint of the rows it covers.
//
// From it a sync learns whom to unsubscribe: the members its complete read of the source no
// longer contains (removals), and the addresses a key left for another one (moves: the member
// is marked moved when the new address is acknowledged, and unsubscribed at the end of the
// run). A member unsubscribed is deleted from the roster.

// RosterEntry is one member of a roster as a run holds it in memory: hashes only.
type RosterEntry struct {
	Email uint64 // EmailHash of the address
	Key   uint64 // KeyHash of the source key; 0 = none
}

// Roster is the members of a sync's roster (not those moved), in memory: 16 bytes a member
// (20 with a key). It is immutable and safe for concurrent use.
type Roster struct {
	sync    string
	listID  int64
	byEmail []RosterEntry // sorted by Email
	byKey   []RosterEntry // the members with a key, sorted by Key
}

// Sync is the name of the sync the roster belongs to.
func (r *Roster) Sync() string { return r.sync }

// ListID is the list the roster belongs to.
func (r *Roster) ListID() int64 { return r.listID }

// Len is how many members the roster has.
func (r *Roster) Len() int { return len(r.byEmail) }

// Member reports whether the address (EmailHash) is a member, and with which key.
func (r *Roster) Member(email uint64) (key uint64, ok bool) {
	i, ok := slices.BinarySearchFunc(r.byEmail, email, func(e RosterEntry, t uint64) int { return cmp.Compare(e.Email, t) })
	if !ok {
		return 0, false
	}
	return r.byEmail[i].Key, true
}

// ByKey returns the address (EmailHash) of the member with the key (KeyHash), if any.
func (r *Roster) ByKey(key uint64) (email uint64, ok bool) {
	if key == 0 {
		return 0, false
	}
	i, ok := slices.BinarySearchFunc(r.byKey, key, func(e RosterEntry, t uint64) int { return cmp.Compare(e.Key, t) })
	if !ok {
		return 0, false
	}
	return r.byKey[i].Email, true
}

// NewRoster returns an empty roster: a sync's first run that keeps one.
func NewRoster(sync string, listID int64) *Roster { return &Roster{sync: sync, listID: listID} }

// KeyHash is the hash of a source key (trimmed); 0 for an empty key.
func KeyHash(key string) uint64 {
	key = strings.TrimSpace(key)
	if key == "" {
		return 0
	}
	h := NewHasher()
	h.String("key")
	h.String(key)
	return h.Sum64() | 1
}

// LoadRoster reads the members of a sync's roster for its list.
func (s *Store) LoadRoster(ctx context.Context, sync string, listID int64) (*Roster, error) {
	r := NewRoster(sync, listID)
	rows, err := s.db.QueryContext(ctx, `SELECT email_hash, key_hash FROM subsync_roster
WHERE sync = $1 AND list_id = $2 AND moved = 0`, sync, listID)
	if err != nil {
		return nil, fmt.Errorf("load roster of sync %q: %w", sync, err)
	}
	defer rows.Close()
	for rows.Next() {
		var e, k int64
		if err := rows.Scan(&e, &k); err != nil {
			return nil, fmt.Errorf("load roster of sync %q: %w", sync, err)
		}
		r.byEmail = append(r.byEmail, RosterEntry{Email: uint64(e), Key: uint64(k)})
		if k != 0 {
			r.byKey = append(r.byKey, RosterEntry{Email: uint64(e), Key: uint64(k)})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load roster of sync %q: %w", sync, err)
	}
	slices.SortFunc(r.byEmail, func(a, b RosterEntry) int { return cmp.Compare(a.Email, b.Email) })
	slices.SortFunc(r.byKey, func(a, b RosterEntry) int { return cmp.Compare(a.Key, b.Key) })
	return r, nil
}

// Member is one address a sync delivered, as a checkpoint records it in the roster.
type Member struct {
	Email string // as sent (normalised: trimmed, lower-cased)
	Key   string // the source key, "" for none
	// Moved: the key belonged to another member, whose address is now marked moved (it is
	// unsubscribed at the end of the run).
	Moved bool
}

// RosterChange is what a checkpoint changes in a sync's roster.
type RosterChange struct {
	Sync   string
	ListID int64
	Add    []Member
	// Suppress records, for the list, the status a member's consent carried over from the
	// address their key had before (see Member.Moved).
	Suppress []Suppression
}

func (c *RosterChange) empty() bool { return c == nil || len(c.Add) == 0 && len(c.Suppress) == 0 }

// writeRoster writes a checkpoint's roster members (its suppressions: see suppressAll).
func (s *Store) writeRoster(ctx context.Context, tx execer, c *RosterChange) error {
	if c.empty() {
		return nil
	}
	for _, m := range c.Add {
		if !m.Moved {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE subsync_roster SET moved = 1
WHERE sync = $1 AND list_id = $2 AND key_hash = $3 AND email <> $4 AND moved = 0`,
			c.Sync, c.ListID, int64(KeyHash(m.Key)), NormaliseEmail(m.Email)); err != nil {
			return fmt.Errorf("roster of sync %q: mark a moved address: %w", c.Sync, err)
		}
	}
	const cols = 6
	add := c.Add
	maxRows := s.d.bulkRows()
	args := make([]any, 0, min(len(add), maxRows)*cols)
	for len(add) > 0 {
		n := min(len(add), maxRows)
		args = args[:0]
		seen := make(map[string]bool, n) // one statement must not name an address twice
		for _, m := range add[:n] {
			e := NormaliseEmail(m.Email)
			if seen[e] {
				continue
			}
			seen[e] = true
			key := strings.TrimSpace(m.Key)
			args = append(args, c.Sync, c.ListID, e, int64(EmailHash(e)), key, int64(KeyHash(key)))
		}
		var b strings.Builder
		b.WriteString("INSERT INTO subsync_roster (sync, list_id, email, email_hash, ext_key, key_hash) VALUES ")
		s.d.placeholders(&b, len(args)/cols, cols, 1)
		b.WriteString(` ON CONFLICT (sync, list_id, email) DO UPDATE SET ext_key = excluded.ext_key,
    key_hash = excluded.key_hash, moved = 0`)
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("roster of sync %q: %w", c.Sync, err)
		}
		add = add[n:]
	}
	return nil
}

// RosterRow is one row of a roster as ScanRoster reads it.
type RosterRow struct {
	Address string
	RosterEntry
	Moved bool
}

// ScanRoster calls fn for every row of a sync's roster (members and moved addresses), in no
// particular order; fn's error stops it.
func (s *Store) ScanRoster(ctx context.Context, sync string, listID int64, fn func(RosterRow) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT email, email_hash, key_hash, moved FROM subsync_roster
WHERE sync = $1 AND list_id = $2`, sync, listID)
	if err != nil {
		return fmt.Errorf("read roster of sync %q: %w", sync, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r RosterRow
		var e, k int64
		var moved int
		if err := rows.Scan(&r.Address, &e, &k, &moved); err != nil {
			return fmt.Errorf("read roster of sync %q: %w", sync, err)
		}
		r.RosterEntry = RosterEntry{Email: uint64(e), Key: uint64(k)}
		r.Moved = moved != 0
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read roster of sync %q: %w", sync, err)
	}
	return nil
}

// Removal is a stretch of a sync's removals the service acknowledged: the addresses it
// unsubscribed, written in one transaction fenced by the run's lease (the run's removed count
// grows, the addresses leave the roster), so a resumed run does not send them again.
type Removal struct {
	RunID  int64
	Owner  string
	TTL    time.Duration
	Sync   string
	ListID int64
	// Removed were unsubscribed (counted); Dropped leave the roster without being counted
	// (moved addresses the suppression list already holds as unsubscribed or bounced).
	Removed []string
	Dropped []string
	// Requests and Retries are the HTTP requests (and retries) the stretch took.
	Requests, Retries int64
}

// RecordRemoval writes a stretch of removals. On ErrLeaseLost nothing is written.
func (s *Store) RecordRemoval(ctx context.Context, r Removal) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.d.nowExpr()
		res, err := tx.ExecContext(ctx, `UPDATE subsync_run SET rows_removed = rows_removed + $3,
    lease_until = `+now+` + $4, updated_at = `+now+`, requests = requests + $5, retries = retries + $6
WHERE id = $1 AND lease_owner = $2`, r.RunID, r.Owner, len(r.Removed), r.TTL.Microseconds(), r.Requests, r.Retries)
		if err != nil {
			return fmt.Errorf("record removals of run %d: %w", r.RunID, err)
		}
		if err := fenced(res, r.RunID); err != nil {
			return err
		}
		if err := recordRemoved(ctx, tx, s.d, r); err != nil {
			return err
		}
		return deleteRoster(ctx, tx, s.d, r.Sync, r.ListID, append(slices.Clip(r.Removed), r.Dropped...))
	})
}

// deleteRoster deletes addresses from a sync's roster.
func deleteRoster(ctx context.Context, tx *sql.Tx, d Dialect, sync string, listID int64, emails []string) error {
	maxRows := d.bulkRows()
	for len(emails) > 0 {
		n := min(len(emails), maxRows)
		args := []any{sync, listID}
		var b strings.Builder
		b.WriteString("DELETE FROM subsync_roster WHERE sync = ")
		d.param(&b, 1)
		b.WriteString(" AND list_id = ")
		d.param(&b, 2)
		b.WriteString(" AND email IN (")
		for i, e := range emails[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			d.param(&b, 3+i)
			args = append(args, NormaliseEmail(e))
		}
		b.WriteByte(')')
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("delete from the roster of sync %q: %w", sync, err)
		}
		emails = emails[n:]
	}
	return nil
}
