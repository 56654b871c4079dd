package sinktest

import (
	"iter"
	"slices"
)

// membership is a subscriber's place in one list.
type membership struct {
	list    int64
	updated int64 // unix ms of the last status change (or creation)
	status  uint8
	mobile  uint8
}

// subscriber is one person, unique by e-mail. It holds no pointers, so that the collector
// need not visit the millions the end-to-end benchmark keeps: its strings are in the store's
// arena, its first membership (most have only one) is inline, and the rare further
// memberships and tags are in the store's side maps.
type subscriber struct {
	id       int64  // 0 once deleted
	email    strRef // trimmed, as first given
	key      strRef // trimmed and lower-cased: the identity
	fields   strRef // packed, see appendFields
	created  int64  // unix ms
	updated  int64  // unix ms
	first    membership
	hasMore  bool // memberships after first are in store.more
	hasPhone bool
}

// subsChunk is how many subscribers one chunk of a subTable holds.
const subsChunk = 1 << 16

// subTable holds the subscribers by id in fixed chunks: a subscriber never moves, and the
// table grows without copying what it holds.
type subTable struct {
	chunks [][]subscriber
	n      int64 // ids given
}

func (t *subTable) len() int64 { return t.n }

// at returns the subscriber with id (1 ≤ id ≤ len), deleted or not.
func (t *subTable) at(id int64) *subscriber {
	i := id - 1
	return &t.chunks[i/subsChunk][i%subsChunk]
}

// add returns a new subscriber with the next id.
func (t *subTable) add() *subscriber {
	if t.n%subsChunk == 0 {
		t.chunks = append(t.chunks, make([]subscriber, subsChunk))
	}
	t.n++
	s := t.at(t.n)
	s.id = t.n
	return s
}

// subscriber returns the subscriber with id, or nil when there is none (any longer).
func (st *store) subscriber(id int64) *subscriber {
	if id < 1 || id > st.subs.len() {
		return nil
	}
	if s := st.subs.at(id); s.id != 0 {
		return s
	}
	return nil
}

// live yields the subscribers not deleted, by id.
func (st *store) live() iter.Seq[*subscriber] {
	return func(yield func(*subscriber) bool) {
		for id := int64(1); id <= st.subs.len(); id++ {
			if s := st.subscriber(id); s != nil && !yield(s) {
				return
			}
		}
	}
}

// byEmailKey returns the subscriber whose key is key, or nil.
func (st *store) byEmailKey(key string) *subscriber {
	if id := st.byKey.find(key); id != 0 {
		return st.subs.at(int64(id))
	}
	return nil
}

func (st *store) email(s *subscriber) string    { return st.arena.str(s.email) }
func (st *store) fieldsOf(s *subscriber) string { return st.arena.str(s.fields) }
func (st *store) tagsOf(s *subscriber) []string { return st.tags[s.id] }

// memberships yields the memberships of s, in the order they were made.
func (st *store) memberships(s *subscriber) iter.Seq[*membership] {
	return func(yield func(*membership) bool) {
		if s.first.list == 0 || !yield(&s.first) || !s.hasMore {
			return
		}
		more := st.more[s.id]
		for i := range more {
			if !yield(&more[i]) {
				return
			}
		}
	}
}

// membership returns the membership of s in list, or nil.
func (st *store) membership(s *subscriber, list int64) *membership {
	for m := range st.memberships(s) {
		if m.list == list {
			return m
		}
	}
	return nil
}

// join adds the membership m to s and returns it as held.
func (st *store) join(s *subscriber, m membership) *membership {
	if s.first.list == 0 {
		s.first = m
		return &s.first
	}
	more := append(st.more[s.id], m)
	st.more[s.id] = more
	s.hasMore = true
	return &more[len(more)-1]
}

// leave removes the membership of s in list, if any. The others keep their order.
func (st *store) leave(s *subscriber, list int64) {
	more := st.more[s.id]
	if s.first.list == list {
		s.first = membership{}
		if len(more) == 0 {
			return
		}
		s.first, more = more[0], more[1:]
	} else {
		more = slices.DeleteFunc(more, func(m membership) bool { return m.list == list })
	}
	if len(more) == 0 {
		delete(st.more, s.id)
		s.hasMore = false
		return
	}
	st.more[s.id] = more
}

// count adds sign times the contribution of s to the counts of its lists.
func (st *store) count(s *subscriber, sign int) {
	for m := range st.memberships(s) {
		l := st.lists[m.list]
		if l == nil {
			continue
		}
		if m.status == stActive {
			l.emails += sign
		}
		if s.hasPhone && m.mobile == stActive {
			l.sms += sign
		}
	}
}

func (st *store) deleteSubscriber(id int64) bool {
	s := st.subscriber(id)
	if s == nil {
		return false
	}
	st.count(s, -1)
	st.byKey.remove(st.arena.str(s.key))
	delete(st.tags, id)
	delete(st.more, id)
	*s = subscriber{}
	return true
}

// record appends a status change of s in the membership m to the feed.
func (st *store) record(s *subscriber, m *membership, now int64) {
	st.changes = append(st.changes, change{
		subscriber: s.id, email: s.email, fields: s.fields,
		list: m.list, status: m.status, mobile: m.mobile, at: now,
	})
}

// setStatus sets the e-mail status of s in list (0 = every list) and records each change.
func (st *store) setStatus(s *subscriber, list int64, status uint8, now int64) bool {
	found := false
	st.count(s, -1)
	for m := range st.memberships(s) {
		if list != 0 && m.list != list {
			continue
		}
		found = true
		if m.status != status {
			m.status = status
			m.updated = now
			st.record(s, m, now)
		}
	}
	st.count(s, +1)
	if found {
		s.updated = now
	}
	return found
}
