package sinktest

import (
	"slices"
	"strings"
)

// upsert is one validated row to apply.
type upsert struct {
	email   string
	key     string
	fields  []fieldKV // sorted by idx, non-empty values
	tags    []string
	hasTags bool
}

// applyOpts are the per-request options of an upsert.
type applyOpts struct {
	lists     []int64
	status    uint8 // stNone = not given
	mobile    uint8 // stNone = not given
	mergeTags bool
	revive    bool // an explicit active revives unsubscribed/bounce
	omitted   bool // no status given revives unsubscribed/bounce too (WithOmissionRevives)
}

// resolve returns the status after applying opt to cur. omitted: a missing status revives.
func resolve(cur, opt uint8, revive, omitted bool) uint8 {
	switch opt {
	case stNone:
		if omitted {
			return stActive
		}
		return cur
	case stReactivate:
		return stActive
	case stActive:
		if (cur == stUnsubscribed || cur == stBounce) && !revive {
			return cur
		}
		return stActive
	}
	return opt
}

// prefetch brings the index slots of the upserts' keys into the cache together (see
// keyIndex.touch), before apply visits them one by one.
func (st *store) prefetch(ups []upsert) {
	st.hashes = st.hashes[:0]
	for i := range ups {
		st.hashes = append(st.hashes, st.byKey.hash(ups[i].key))
	}
	st.byKey.touch(st.hashes)
}

// apply upserts u into every list of o and returns the subscriber.
//
// The upsert's strings may point into the request body, whose buffer is reused for the next
// request: what is kept is copied, into the arena (e-mail, key, fields) or anew (tags).
func (st *store) apply(u *upsert, o applyOpts, now int64) *subscriber {
	var s *subscriber
	if id, added := st.byKey.add(u.key, uint32(st.subs.len()+1)); added {
		s = st.subs.add() // with that id
		s.email = st.arena.add(u.email)
		s.key = s.email
		if u.key != u.email {
			s.key = st.arena.add(u.key)
		}
		s.created = now
	} else {
		s = st.subs.at(int64(id))
		st.count(s, -1)
	}
	if b, changed := st.merger.mergeBytes(st.fieldsOf(s), u.fields); changed {
		s.fields = st.arena.addBytes(b)
	}
	s.hasPhone = lookupField(st.fieldsOf(s), fPhone) != ""
	if u.hasTags {
		st.setTags(s, u.tags, o.mergeTags)
	}
	s.updated = now
	for _, id := range o.lists {
		m := st.membership(s, id)
		if m == nil {
			m = st.join(s, membership{
				list: id, updated: now,
				status: resolve(stActive, o.status, true, false), mobile: resolve(stActive, o.mobile, true, false),
			})
			if o.status != stNone || o.mobile != stNone {
				st.record(s, m, now)
			}
			continue
		}
		status, mobile := resolve(m.status, o.status, o.revive, o.omitted), resolve(m.mobile, o.mobile, o.revive, o.omitted)
		if status != m.status || mobile != m.mobile {
			m.status, m.mobile, m.updated = status, mobile, now
			st.record(s, m, now)
		}
	}
	st.count(s, +1)
	return s
}

// setTags replaces the tags of s by tags, or with merge adds those it does not have yet.
func (st *store) setTags(s *subscriber, tags []string, merge bool) {
	cur := st.tags[s.id]
	if !merge {
		cur = nil
	}
	for _, t := range tags {
		if !merge || !slices.Contains(cur, t) {
			cur = append(cur, strings.Clone(t))
		}
	}
	if len(cur) == 0 {
		delete(st.tags, s.id)
		return
	}
	st.tags[s.id] = cur
}
