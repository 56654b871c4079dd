package sink

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/subsync/subsync/internal/secret"
)

// StatusChange is one entry of the service's status feed: a subscriber whose status (or
// SMS status) in a list changed at DateUpdated.
type StatusChange struct {
	SubscriberID int64
	Email        string
	Phone        string
	Status       string // active, unsubscribed or bounce (lower case); "" when only StatusMobile is given
	StatusMobile string
	ListID       int64
	DateUpdated  time.Time // UTC
}

// ErrStatusFeedShape is wrapped by the error of a status answer subsync cannot read: an
// unknown top-level shape, or an entry without a recognisable e-mail (or subscriber id),
// status or time. Such an answer is never taken in part.
var ErrStatusFeedShape = errors.New("status feed answer not understood")

// StatusEntryShape is the entry form subsync reads from the status feed, as its errors show it.
const StatusEntryShape = `{"email" (or "id"/"subscriber_id"), "status" (or "email_status"; or only "status_mobile"/"phone_status"/"sms_status"), ` +
	`"date_updated" (or "updated_at"), optional "subscriber_list_id"/"list_id", "phone"}`

// statusShape is the top-level form subsync reads, as its errors show it.
const statusShape = `a JSON array of entries, or an object holding them under one of ` +
	`"data", "items", "results", "changes", "subscribers", "statuses" or "entries" ` +
	`(with optional paging: "next", "next_page", "page"/"total", "links", "meta")`

// statusKeys are the members an object answer may hold its entries under.
var statusKeys = []string{"data", "items", "results", "changes", "subscribers", "statuses", "entries"}

// statusEntry is the wire form, with the alternative member names seen in the wild.
type statusEntry struct {
	ID               flexInt    `json:"id"`
	SubscriberID     flexInt    `json:"subscriber_id"`
	Email            flexString `json:"email"`
	Phone            flexString `json:"phone"`
	Mobile           flexString `json:"mobile"`
	Status           flexString `json:"status"`
	EmailStatus      flexString `json:"email_status"`
	StatusMobile     flexString `json:"status_mobile"`
	PhoneStatus      flexString `json:"phone_status"` // the public PHP client's name
	SMSStatus        flexString `json:"sms_status"`
	SubscriberListID flexInt    `json:"subscriber_list_id"`
	ListID           flexInt    `json:"list_id"`
	DateUpdated      flexString `json:"date_updated"`
	UpdatedAt        flexString `json:"updated_at"`
}

// statusPage is one answer of the status feed.
type statusPage struct {
	changes []StatusChange
	hinted  bool   // the answer carries some paging hint
	nextURL string // a next page by URL
	next    int64  // a next page by number; 0 = none
	page    int64  // this page's number, when stated
	last    int64  // the last page's number, when stated or computed
	total   int64  // the total of entries, when stated; -1 = not stated
	hasMore bool   // the answer says more entries follow (has_more: true)
}

// parseStatusPage reads one answer: its entries and the paging hints of its body and its
// headers (see readHeaderPaging).
func (c *Client) parseStatusPage(body []byte, header http.Header) (statusPage, error) {
	p := statusPage{total: -1}
	if err := readHeaderPaging(header, &p); err != nil {
		return p, err
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n\ufeff")
	trimmed = bytes.TrimPrefix(trimmed, []byte("\xef\xbb\xbf"))
	var entries []json.RawMessage
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		if err := json.Unmarshal(trimmed, &entries); err != nil {
			return p, fmt.Errorf("%w: %v; want %s", ErrStatusFeedShape, err, statusShape)
		}
	case len(trimmed) > 0 && trimmed[0] == '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &obj); err != nil {
			return p, fmt.Errorf("%w: %v; want %s", ErrStatusFeedShape, err, statusShape)
		}
		found := ""
		for _, k := range statusKeys {
			if v, ok := obj[k]; ok && bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
				found = k
				break
			}
		}
		if found == "" {
			return p, fmt.Errorf("%w: an object with members %s; want %s", ErrStatusFeedShape, memberNames(obj), statusShape)
		}
		if err := json.Unmarshal(obj[found], &entries); err != nil {
			return p, fmt.Errorf("%w: %q: %v; want %s", ErrStatusFeedShape, found, err, statusShape)
		}
		if err := readPaging(obj, &p); err != nil {
			return p, err
		}
	case json.Valid(trimmed):
		return p, fmt.Errorf("%w: a JSON value %s; want %s", ErrStatusFeedShape, maskScalar(trimmed), statusShape)
	default:
		return p, fmt.Errorf("%w: a body of %d bytes that is not JSON; want %s", ErrStatusFeedShape, len(body), statusShape)
	}
	p.changes = make([]StatusChange, 0, len(entries))
	for i, raw := range entries {
		ch, err := parseStatusEntry(raw)
		if err != nil {
			return p, fmt.Errorf("%w: entry %d %s: %v; want %s", ErrStatusFeedShape, i+1, maskEntry(raw), err, StatusEntryShape)
		}
		p.changes = append(p.changes, ch)
	}
	return p, nil
}

// parseStatusEntry reads one entry, strictly.
func parseStatusEntry(raw json.RawMessage) (StatusChange, error) {
	var e statusEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return StatusChange{}, err
	}
	ch := StatusChange{
		SubscriberID: int64(cmp.Or(e.ID, e.SubscriberID)),
		Email:        strings.TrimSpace(string(e.Email)),
		Phone:        strings.TrimSpace(string(cmp.Or(e.Phone, e.Mobile))),
		Status:       strings.ToLower(strings.TrimSpace(string(cmp.Or(e.Status, e.EmailStatus)))),
		StatusMobile: strings.ToLower(strings.TrimSpace(string(cmp.Or(e.StatusMobile, e.PhoneStatus, e.SMSStatus)))),
		ListID:       int64(cmp.Or(e.SubscriberListID, e.ListID)),
	}
	if ch.Email == "" && ch.SubscriberID == 0 {
		return ch, errors.New("no e-mail and no subscriber id")
	}
	if ch.Email != "" && !strings.Contains(ch.Email, "@") {
		return ch, errors.New("an e-mail without @")
	}
	if ch.Status == "" && ch.StatusMobile == "" {
		return ch, errors.New("no status")
	}
	for _, s := range []string{ch.Status, ch.StatusMobile} {
		switch s {
		case "", StatusActive, StatusUnsubscribed, StatusBounce:
		default:
			return ch, fmt.Errorf("unknown status %q (want active, unsubscribed or bounce)", excerpt(s, 30))
		}
	}
	when := strings.TrimSpace(string(cmp.Or(e.DateUpdated, e.UpdatedAt)))
	if when == "" {
		return ch, errors.New("no time (date_updated)")
	}
	t, err := parseTime(when)
	if err != nil {
		return ch, err
	}
	ch.DateUpdated = t
	return ch, nil
}

// maskEntry renders a feed entry for an error message with every value that may be personal
// data replaced: only ids, statuses, list ids and times are shown as they are.
func maskEntry(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return "(not an object: " + maskScalar(raw) + ")"
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(k))
		b.WriteString(": ")
		switch k {
		case "id", "subscriber_id", "status", "email_status", "status_mobile", "phone_status", "sms_status",
			"subscriber_list_id", "list_id", "date_updated", "updated_at":
			b.WriteString(excerpt(string(bytes.TrimSpace(obj[k])), 40))
		default:
			b.WriteString(maskScalar(obj[k]))
		}
	}
	b.WriteByte('}')
	return b.String()
}

// maskScalar replaces a value with its kind: "…@example.com" keeps an e-mail's domain
// (rarely personal), everything else becomes secret.Personal.
func maskScalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0, string(raw) == "null", string(raw) == "true", string(raw) == "false":
		return string(raw)
	case raw[0] == '"':
		s := rawText(raw)
		if s == "" {
			return `""`
		}
		if at := strings.LastIndexByte(s, '@'); at >= 0 {
			return strconv.Quote(secret.Personal + s[at:])
		}
		return strconv.Quote(secret.Personal)
	case raw[0] == '{', raw[0] == '[':
		return "(" + secret.Personal + ")"
	}
	return secret.Personal
}

// dedupeChanges drops exact repeats and what falls outside [from, to] (zero = open), and
// orders the rest oldest first.
func dedupeChanges(entries []StatusChange, from, to time.Time) []StatusChange {
	seen := make(map[changeKey]bool, len(entries))
	out := make([]StatusChange, 0, len(entries))
	for _, ch := range entries {
		if (!from.IsZero() && ch.DateUpdated.Before(from)) || (!to.IsZero() && ch.DateUpdated.After(to)) {
			continue
		}
		k := keyOf(ch)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, ch)
	}
	slices.SortStableFunc(out, func(a, b StatusChange) int { return a.DateUpdated.Compare(b.DateUpdated) })
	return out
}
