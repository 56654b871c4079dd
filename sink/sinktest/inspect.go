package sinktest

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"
)

// Stored is a subscriber as the Emulator holds it.
type Stored struct {
	ID    int64
	Email string // trimmed, as first given
	// Fields holds every non-empty field but the e-mail, by service name: firstname, phone,
	// SAMTYKKEEPOST, EXTRA3 (only slots of existing custom fields)…
	Fields map[string]string
	Tags   []string
	Lists  map[int64]Membership
}

// Membership is a subscriber's place in one list.
type Membership struct {
	Status       string // active, unsubscribed or bounce
	StatusMobile string // active, unsubscribed or bounce
	Updated      time.Time
}

// Request is one request the Emulator answered.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Rows   int    // rows in a bulkinsert body (also when refused), else 0
	Status int    // HTTP status answered; 0 when the client went away during Latency
	Fault  string // "" or the injected fault: "500", "502", "503", "429", "max-rps", "drop", "canceled"
}

// maxRequests bounds the request log; past it the older half is forgotten.
const maxRequests = 1 << 17

func (e *Emulator) addRequest(r Request) {
	e.rmu.Lock()
	defer e.rmu.Unlock()
	if len(e.reqs) >= maxRequests {
		e.reqs = append(e.reqs[:0], e.reqs[len(e.reqs)/2:]...)
	}
	e.reqs = append(e.reqs, r)
}

// Requests returns the requests answered so far (at most the latest 131072), oldest first.
func (e *Emulator) Requests() []Request {
	e.rmu.Lock()
	defer e.rmu.Unlock()
	return slices.Clone(e.reqs)
}

// ResetRequests forgets the requests answered so far.
func (e *Emulator) ResetRequests() {
	e.rmu.Lock()
	defer e.rmu.Unlock()
	e.reqs = nil
}

func (st *store) stored(s *subscriber) Stored {
	out := Stored{ID: s.id, Email: st.email(s), Fields: map[string]string{}, Lists: map[int64]Membership{}}
	for _, kv := range decodeFields(nil, st.fieldsOf(s)) {
		if kv.idx > fieldExtraBase && st.slots[kv.idx-fieldExtraBase] == nil {
			continue
		}
		out.Fields[fieldName(kv.idx)] = kv.val
	}
	if tags := st.tagsOf(s); len(tags) > 0 {
		out.Tags = slices.Clone(tags)
	}
	for m := range st.memberships(s) {
		out.Lists[m.list] = Membership{Status: statusName(m.status), StatusMobile: statusName(m.mobile), Updated: time.UnixMilli(m.updated).UTC()}
	}
	return out
}

// Subscribers returns every subscriber, ordered by id.
func (e *Emulator) Subscribers() []Stored {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Stored
	for s := range e.st.live() {
		out = append(out, e.st.stored(s))
	}
	return out
}

// SubscriberByEmail returns the subscriber with this e-mail (trimmed, case-insensitive).
func (e *Emulator) SubscriberByEmail(email string) (Stored, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.st.byEmailKey(emailKey(email))
	if s == nil {
		return Stored{}, false
	}
	return e.st.stored(s), true
}

// ListSubscribers returns the subscribers with a membership in the list, ordered by id.
func (e *Emulator) ListSubscribers(listID int64) []Stored {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Stored
	for s := range e.st.live() {
		if e.st.membership(s, listID) != nil {
			out = append(out, e.st.stored(s))
		}
	}
	return out
}

// ListMemberCount returns how many subscribers are in the list, whatever their status, as
// len(ListSubscribers(listID)) would, without building them: the end-to-end benchmark checks
// ten million members after a run.
func (e *Emulator) ListMemberCount(listID int64) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for s := range e.st.live() {
		if e.st.membership(s, listID) != nil {
			n++
		}
	}
	return n
}

// SubscriberCount returns how many subscribers the store holds, cheaply.
func (e *Emulator) SubscriberCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.byKey.len()
}

// CreateList creates a list, as POST /subscriberlists would, and returns its id.
func (e *Emulator) CreateList(title string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.createList(title, ms(e.now())).id
}

// CreateCustomField creates a custom field, as POST /custom_fields would, and returns its id
// and slot (EXTRA<n>). It panics on an unknown datatype: that is a mistake in the test.
func (e *Emulator) CreateCustomField(label, datatype string, choices ...string) (id int64, slot string) {
	if !slices.Contains(datatypes, datatype) {
		panic(fmt.Sprintf("sinktest: CreateCustomField: unknown datatype %q", datatype))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.st.createField(label, datatype, slices.Clone(choices))
	return f.id, fieldName(fieldExtraBase + f.slot)
}

// ErrNotFound is returned by SetStatus for an unknown e-mail or a list the subscriber is not in.
var ErrNotFound = errors.New("not found")

// SetStatus sets the e-mail status of a subscriber in a list (0: in every list it is in) and
// records the change for /subscriberstatus, as an unsubscribe or a bounce seen by the service
// would. status is active, unsubscribed or bounce.
func (e *Emulator) SetStatus(email string, listID int64, status string) error {
	code, ok := parseStatus(status, false)
	if !ok {
		return fmt.Errorf("set status of %s: unknown status %q", email, status)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.st.byEmailKey(emailKey(email))
	if s == nil {
		return fmt.Errorf("set status of %s: subscriber: %w", email, ErrNotFound)
	}
	if !e.st.setStatus(s, listID, code, ms(e.now())) {
		return fmt.Errorf("set status of %s: membership in list %d: %w", email, listID, ErrNotFound)
	}
	return nil
}
