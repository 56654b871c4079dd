package sinktest

import (
	"slices"
	"strings"
	"time"
)

// Membership statuses, stored as a byte per membership.
const (
	stNone uint8 = iota
	stActive
	stUnsubscribed
	stBounce
	stReactivate // only as a bulkinsert query value; stored as stActive
)

var statusNames = [...]string{stNone: "", stActive: "active", stUnsubscribed: "unsubscribed", stBounce: "bounce", stReactivate: "reactivate"}

func statusName(s uint8) string { return statusNames[s] }

// parseStatus maps a status word to its code. reactivate is accepted only when allowed.
func parseStatus(s string, allowReactivate bool) (uint8, bool) {
	switch s {
	case "active":
		return stActive, true
	case "unsubscribed":
		return stUnsubscribed, true
	case "bounce":
		return stBounce, true
	case "reactivate":
		return stReactivate, allowReactivate
	}
	return stNone, false
}

// membership is a subscriber's place in one list.
type membership struct {
	list    int64
	updated int64 // unix ms of the last status change (or creation)
	status  uint8
	mobile  uint8
}

// subscriber is one person, unique by e-mail. It is kept compact: a million of them are
// held in memory by the end-to-end tests.
type subscriber struct {
	id       int64
	email    string // trimmed, as first given
	key      string // trimmed and lower-cased: the identity
	fields   string // packed, see encodeFields
	tags     []string
	created  int64 // unix ms
	updated  int64 // unix ms
	hasPhone bool
	lists    []membership
}

func (s *subscriber) membership(list int64) *membership {
	for i := range s.lists {
		if s.lists[i].list == list {
			return &s.lists[i]
		}
	}
	return nil
}

type list struct {
	id      int64
	title   string
	created int64
	updated int64
	emails  int // active memberships (every subscriber has an e-mail)
	sms     int // memberships with a phone and status_mobile active
}

type customField struct {
	id       int64
	label    string
	slot     int // n of EXTRA<n>
	datatype string
	choices  []string
	dateOrd  int // for date fields: 1-based order among all date fields ever created (v3 extra_date<n>)
}

func (f *customField) hasChoices() bool {
	switch f.datatype {
	case "single_choice", "multiple_choice", "dropdown":
		return true
	}
	return false
}

// change is one entry of the /subscriberstatus feed.
type change struct {
	subscriber int64
	email      string
	phone      string
	list       int64
	status     uint8
	mobile     uint8
	at         int64 // unix ms
}

// store is the emulator's whole state. It is guarded by Emulator.mu.
type store struct {
	nextList   int64
	nextField  int64
	lastSlot   int
	dateFields int
	lists      map[int64]*list
	fields     map[int64]*customField
	slots      map[int]*customField // existing slots only
	subs       []*subscriber        // index id-1; nil once deleted
	byKey      map[string]*subscriber
	changes    []change
	merger     merger
	fieldsVer  uint64     // bumped on every change of a custom field
	defs       *fieldDefs // snapshot of the custom fields at fieldsVer; nil when stale
	rules      *valueRules
}

// fieldDefs is an immutable snapshot of the custom fields, by slot, so that a request can be
// validated without holding the store lock.
type fieldDefs struct {
	ver   uint64
	slots map[int]*customField
	rules *valueRules
}

// fieldDefs returns the snapshot of the current custom fields.
func (st *store) fieldDefs() *fieldDefs {
	if st.defs == nil {
		d := &fieldDefs{ver: st.fieldsVer, slots: make(map[int]*customField, len(st.slots)), rules: st.rules}
		for n, f := range st.slots {
			c := *f
			d.slots[n] = &c
		}
		st.defs = d
	}
	return st.defs
}

// fieldsChanged invalidates the snapshot of the custom fields.
func (st *store) fieldsChanged() {
	st.fieldsVer++
	st.defs = nil
}

func newStore() *store {
	return &store{
		rules:  &valueRules{},
		lists:  make(map[int64]*list),
		fields: make(map[int64]*customField),
		slots:  make(map[int]*customField),
		byKey:  make(map[string]*subscriber),
	}
}

func emailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

func ms(t time.Time) int64 { return t.UnixMilli() }

func (st *store) subscriber(id int64) *subscriber {
	if id < 1 || id > int64(len(st.subs)) {
		return nil
	}
	return st.subs[id-1]
}

func (st *store) createList(title string, now int64) *list {
	st.nextList++
	l := &list{id: st.nextList, title: title, created: now, updated: now}
	st.lists[l.id] = l
	return l
}

func (st *store) sortedLists() []*list {
	out := make([]*list, 0, len(st.lists))
	for _, l := range st.lists {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *list) int { return int(a.id - b.id) })
	return out
}

func (st *store) sortedFields() []*customField {
	out := make([]*customField, 0, len(st.fields))
	for _, f := range st.fields {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *customField) int { return a.slot - b.slot })
	return out
}

// deleteList removes the list and every membership in it.
func (st *store) deleteList(id int64) bool {
	if _, ok := st.lists[id]; !ok {
		return false
	}
	delete(st.lists, id)
	for _, s := range st.subs {
		if s == nil {
			continue
		}
		s.lists = slices.DeleteFunc(s.lists, func(m membership) bool { return m.list == id })
	}
	return true
}

func (st *store) createField(label, datatype string, choices []string) *customField {
	st.nextField++
	st.lastSlot++
	f := &customField{id: st.nextField, label: label, slot: st.lastSlot, datatype: datatype, choices: choices}
	if datatype == "date" {
		st.dateFields++
		f.dateOrd = st.dateFields
	}
	st.fields[f.id] = f
	st.slots[f.slot] = f
	st.fieldsChanged()
	return f
}

func (st *store) deleteField(id int64) bool {
	f, ok := st.fields[id]
	if !ok {
		return false
	}
	delete(st.fields, id)
	delete(st.slots, f.slot)
	st.fieldsChanged()
	return true
}

// count adds sign times the contribution of s to the counts of its lists.
func (st *store) count(s *subscriber, sign int) {
	for _, m := range s.lists {
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
	delete(st.byKey, s.key)
	st.subs[id-1] = nil
	return true
}

// record appends a status change of s in the membership m to the feed.
func (st *store) record(s *subscriber, m *membership, now int64) {
	st.changes = append(st.changes, change{
		subscriber: s.id, email: s.email, phone: lookupField(s.fields, fPhone),
		list: m.list, status: m.status, mobile: m.mobile, at: now,
	})
}

// setStatus sets the e-mail status of s in list (0 = every list) and records each change.
func (st *store) setStatus(s *subscriber, list int64, status uint8, now int64) bool {
	found := false
	st.count(s, -1)
	for i := range s.lists {
		m := &s.lists[i]
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

// apply upserts u into every list of o and returns the subscriber.
func (st *store) apply(u *upsert, o applyOpts, now int64) *subscriber {
	s := st.byKey[u.key]
	if s == nil {
		// The upsert's strings point into the request body: keep copies only.
		email := strings.Clone(u.email)
		s = &subscriber{id: int64(len(st.subs)) + 1, email: email, key: strings.ToLower(email), created: now}
		st.subs = append(st.subs, s)
		st.byKey[s.key] = s
	} else {
		st.count(s, -1)
	}
	s.fields = st.merger.merge(s.fields, u.fields)
	s.hasPhone = lookupField(s.fields, fPhone) != ""
	if u.hasTags {
		if o.mergeTags {
			for _, t := range u.tags {
				if !slices.Contains(s.tags, t) {
					s.tags = append(s.tags, t)
				}
			}
		} else {
			s.tags = u.tags
		}
	}
	s.updated = now
	for _, id := range o.lists {
		m := s.membership(id)
		if m == nil {
			s.lists = append(s.lists, membership{
				list: id, updated: now,
				status: resolve(stActive, o.status, true, false), mobile: resolve(stActive, o.mobile, true, false),
			})
			if o.status != stNone || o.mobile != stNone {
				st.record(s, &s.lists[len(s.lists)-1], now)
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
