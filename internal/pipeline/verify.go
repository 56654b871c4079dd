package pipeline

import (
	"slices"
	"strings"
	"sync/atomic"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// Held is what the service holds of a list, for a verifying run (Config.Held): per e-mail
// hash, a hash of each field it holds a value in (name and value). A row is held when the
// service has its e-mail and, for every field the row sends (a payload omits empty values, so
// they never clear one), the same value. Statuses and tags are not compared: the service's
// list does not show tags, and statuses are the suppression list's business.
//
// It holds about 100 bytes per subscriber. Add must not run concurrently with a run.
type Held struct {
	subs      map[uint64][]uint64
	missing   atomic.Int64
	differing atomic.Int64
}

// NewHeld returns an empty Held.
func NewHeld() *Held { return &Held{subs: map[uint64][]uint64{}} }

// Add records one subscriber as the service shows it.
func (h *Held) Add(r sink.SubscriberRecord) {
	var fs []uint64
	add := func(name, v string) {
		if v != "" {
			fs = append(fs, fieldHash(name, v))
		}
	}
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	add(sink.FieldFirstname, r.Firstname)
	add(sink.FieldLastname, r.Lastname)
	add(sink.FieldAddress, r.Address)
	add(sink.FieldZip, r.Zip)
	add(sink.FieldCity, r.City)
	add(sink.FieldPhone, deref(r.Phone))
	add(sink.FieldCompany, r.Company)
	add(sink.FieldBirthday, deref(r.Birthday))
	add(sink.FieldGender, r.Gender)
	add(sink.FieldExternalID, r.ExternalID)
	for name, v := range r.Fields {
		add(strings.ToUpper(name), deref(v))
	}
	slices.Sort(fs)
	h.subs[state.EmailHash(r.Email)] = fs
}

// Len is how many subscribers the service holds in the list.
func (h *Held) Len() int { return len(h.subs) }

// Missing is how many rows of the run the service lacked (and were sent).
func (h *Held) Missing() int64 { return h.missing.Load() }

// Differing is how many rows of the run the service held with other values (and were sent).
func (h *Held) Differing() int64 { return h.differing.Load() }

// holds reports whether the service holds the row's e-mail (found), and every value the row
// sends (same).
func (h *Held) holds(email uint64, r *mapping.Row) (found, same bool) {
	fs, found := h.subs[email]
	if !found {
		return false, false
	}
	has := func(name, v string) bool {
		if v == "" {
			return true
		}
		_, ok := slices.BinarySearch(fs, fieldHash(name, v))
		return ok
	}
	s := &r.Sub
	for _, f := range [...]struct{ name, v string }{{sink.FieldFirstname, s.Firstname}, {sink.FieldLastname, s.Lastname},
		{sink.FieldAddress, s.Address}, {sink.FieldZip, s.Zip}, {sink.FieldCity, s.City}, {sink.FieldPhone, s.Phone},
		{sink.FieldCompany, s.Company}, {sink.FieldBirthday, s.Birthday}, {sink.FieldGender, s.Gender},
		{sink.FieldExternalID, s.ExternalID}} {
		if !has(f.name, f.v) {
			return true, false
		}
	}
	for _, f := range s.Fields {
		if !has(strings.ToUpper(f.Name), f.Value) {
			return true, false
		}
	}
	return true, true
}

func fieldHash(name, v string) uint64 {
	h := state.NewHasher()
	h.String(name)
	h.String(v)
	return h.Sum64()
}

// skipHeld marks the rows the service holds as they are (a verifying run): they count as
// unchanged, and their fingerprint is stored, so that the next delta sync starts from what
// the service holds. The others are sent.
func (f *filter) skipHeld(c *chunk) {
	for i := range c.rows {
		if c.skip[i] || c.dups[i] {
			continue
		}
		switch found, same := f.held.holds(c.emails[i], &c.rows[i]); {
		case !found:
			f.held.missing.Add(1)
		case !same:
			f.held.differing.Add(1)
		default:
			o := newOutcome(&c.rows[i], outUnchanged, c.rows[i].Status, f.dryRun)
			o.refresh = &state.Fingerprint{Email: c.emails[i], Payload: c.payloads[i], Source: c.sources[i]}
			c.outcomes = append(c.outcomes, o)
			c.skip[i] = true
		}
	}
}
