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
	email      strRef // in the store's arena
	fields     strRef // the subscriber's fields then: the phone is read from them
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
	slots      map[int]*customField   // existing slots only
	subs       subTable               // by id, deleted ones too
	byKey      *keyIndex              // the ids of the subscribers not deleted, by key
	arena      arena                  // the subscribers' strings
	tags       map[int64][]string     // the tags of subscribers that have some, by id
	more       map[int64][]membership // memberships after a subscriber's first, by id
	changes    []change
	hashes     []uint32 // scratch space of prefetch
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
	st := &store{
		rules:  &valueRules{},
		lists:  make(map[int64]*list),
		fields: make(map[int64]*customField),
		slots:  make(map[int]*customField),
		tags:   make(map[int64][]string),
		more:   make(map[int64][]membership),
	}
	st.byKey = newKeyIndex(func(id uint32) string { return st.arena.str(st.subs.at(int64(id)).key) })
	return st
}

func emailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

func ms(t time.Time) int64 { return t.UnixMilli() }

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
	for s := range st.live() {
		st.leave(s, id)
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
