package sink

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// StatusChange is one entry of the service's status feed: a subscriber whose status (or
// SMS status) in a list changed at DateUpdated.
type StatusChange struct {
	SubscriberID int64
	Email        string
	Phone        string
	Status       string // active, unsubscribed or bounce (lower case)
	StatusMobile string
	ListID       int64
	DateUpdated  time.Time // UTC
}

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
	SMSStatus        flexString `json:"sms_status"`
	SubscriberListID flexInt    `json:"subscriber_list_id"`
	ListID           flexInt    `json:"list_id"`
	DateUpdated      flexString `json:"date_updated"`
	UpdatedAt        flexString `json:"updated_at"`
}

// StatusChanges fetches the status feed (GET /subscriberstatus?from_date=&to_date=); a zero
// from or to is omitted (the service then answers its default window). The feed is read
// tolerantly: a bare array or an object holding one array; "status" or "email_status",
// "date_updated" or "updated_at"; timestamps with or without milliseconds and zone (no zone
// = UTC); unknown members ignored. Exact repeats — the same e-mail (case-insensitive),
// status, SMS status, list and time — are dropped, and the result is ordered oldest first.
func (c *Client) StatusChanges(ctx context.Context, from, to time.Time) ([]StatusChange, error) {
	query := url.Values{}
	if !from.IsZero() {
		query.Set("from_date", formatTime(from))
	}
	if !to.IsZero() {
		query.Set("to_date", formatTime(to))
	}
	cl := &call{method: http.MethodGet, route: "/subscriberstatus", path: "/subscriberstatus", query: query}
	entries, err := fetchArray[json.RawMessage](ctx, c, cl)
	if err != nil {
		return nil, err
	}
	changes, err := parseStatusChanges(entries)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", cl.method, cl.path, err)
	}
	return changes, nil
}

func parseStatusChanges(entries []json.RawMessage) ([]StatusChange, error) {
	type key struct {
		email, status, statusMobile string
		list                        int64
		at                          time.Time
	}
	seen := make(map[key]bool, len(entries))
	out := make([]StatusChange, 0, len(entries))
	for i, raw := range entries {
		var e statusEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("status change %d: %w", i, err)
		}
		ch := StatusChange{
			SubscriberID: int64(cmp.Or(e.ID, e.SubscriberID)),
			Email:        strings.TrimSpace(string(e.Email)),
			Phone:        strings.TrimSpace(string(cmp.Or(e.Phone, e.Mobile))),
			Status:       strings.ToLower(strings.TrimSpace(string(cmp.Or(e.Status, e.EmailStatus)))),
			StatusMobile: strings.ToLower(strings.TrimSpace(string(cmp.Or(e.StatusMobile, e.SMSStatus)))),
			ListID:       int64(cmp.Or(e.SubscriberListID, e.ListID)),
		}
		if when := strings.TrimSpace(string(cmp.Or(e.DateUpdated, e.UpdatedAt))); when != "" {
			t, err := parseTime(when)
			if err != nil {
				return nil, fmt.Errorf("status change %d (%s): %w", i, ch.Email, err)
			}
			ch.DateUpdated = t
		}
		k := key{strings.ToLower(ch.Email), ch.Status, ch.StatusMobile, ch.ListID, ch.DateUpdated}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, ch)
	}
	slices.SortStableFunc(out, func(a, b StatusChange) int { return a.DateUpdated.Compare(b.DateUpdated) })
	return out, nil
}
