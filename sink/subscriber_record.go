package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SubscriberRecord is a subscriber as the v2 interface shows it. Nullable service fields
// are *string (nil = null).
type SubscriberRecord struct {
	ID          int64
	Email       string
	Firstname   string
	Lastname    string
	Address     string
	Zip         string
	City        string
	Phone       *string
	Company     string
	Birthday    *string
	Gender      string
	ExternalID  string // the id in another system (a CRM's), "" when none
	DateCreated string
	DateUpdated string
	// Fields holds the consent fields (SAMTYKKEEPOST, …) and custom-field slots (EXTRA<n>)
	// exactly as returned; a nil value is a null.
	Fields map[string]*string
	// Status is the subscriber's status where the response carries one (by_list rows may);
	// the show response does not.
	Status string
}

// UnmarshalJSON reads the v2 representation tolerantly: numbers where strings are
// expected are kept as their text, unknown members are ignored.
func (r *SubscriberRecord) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var out SubscriberRecord
	str := func(k string) string { return rawText(raw[k]) }
	nullable := func(k string) *string {
		v, ok := raw[k]
		if !ok {
			return nil
		}
		var f flexNullString
		_ = f.UnmarshalJSON(v)
		return f.ptr()
	}
	var id flexInt
	if v, ok := raw["id"]; ok {
		if err := id.UnmarshalJSON(v); err != nil {
			return fmt.Errorf("subscriber id: %w", err)
		}
	}
	out.ID = int64(id)
	out.Email, out.Firstname, out.Lastname = str(FieldEmail), str(FieldFirstname), str(FieldLastname)
	out.Address, out.Zip, out.City = str(FieldAddress), str(FieldZip), str(FieldCity)
	out.Phone, out.Company, out.Birthday, out.Gender = nullable(FieldPhone), str(FieldCompany), nullable(FieldBirthday), str(FieldGender)
	out.ExternalID = str(FieldExternalID)
	out.DateCreated, out.DateUpdated = str("date_created"), str("date_updated")
	out.Status = cmpStatus(str("status"), str("email_status"))
	for k, v := range raw {
		if !isSlotOrConsent(k) {
			continue
		}
		if out.Fields == nil {
			out.Fields = make(map[string]*string)
		}
		var f flexNullString
		_ = f.UnmarshalJSON(v)
		out.Fields[k] = f.ptr()
	}
	*r = out
	return nil
}

func cmpStatus(a, b string) string {
	if a != "" {
		return strings.ToLower(strings.TrimSpace(a))
	}
	return strings.ToLower(strings.TrimSpace(b))
}

// isSlotOrConsent reports whether a member name is a consent field or an EXTRA<n> slot.
func isSlotOrConsent(k string) bool {
	for _, c := range ConsentFields {
		if k == c {
			return true
		}
	}
	if len(k) <= 5 || !strings.EqualFold(k[:5], "extra") {
		return false
	}
	for _, r := range k[5:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Subscriber shows one subscriber (GET /subscribers/{id}).
func (c *Client) Subscriber(ctx context.Context, id int64) (SubscriberRecord, error) {
	cl := &call{method: http.MethodGet, route: "/subscribers/{id}", path: subscriberPath(id)}
	resp, err := c.do(ctx, cl)
	if err != nil {
		return SubscriberRecord{}, err
	}
	var rec SubscriberRecord
	if err := c.decodeJSON(cl, resp, &rec); err != nil {
		return SubscriberRecord{}, err
	}
	return rec, nil
}

// UpsertSubscriber creates or updates one subscriber in a list
// (POST /subscribers?subscriber_list_id=) and returns the id the service answered with
// (0 if the acknowledgement carries none). status "" is omitted (the service then makes a
// new subscriber active); otherwise it is active, unsubscribed or bounce, and is sent both as
// a body member (the spec's seed) and as a query parameter (the public PHP client).
func (c *Client) UpsertSubscriber(ctx context.Context, listID int64, s Subscriber, status string) (int64, error) {
	if strings.TrimSpace(s.Email) == "" {
		return 0, fmt.Errorf("upsert subscriber: %w: the e-mail is empty", ErrInvalidInput)
	}
	switch status {
	case "", StatusActive, StatusUnsubscribed, StatusBounce:
	default:
		return 0, fmt.Errorf("upsert subscriber: %w: status %q, want active, unsubscribed or bounce", ErrInvalidInput, status)
	}
	body := s.AppendJSON(make([]byte, 0, 256))
	if status != "" {
		body = body[:len(body)-1] // drop '}'
		if len(body) > 1 {
			body = append(body, ',')
		}
		body = append(body, `"status":`...)
		body = appendString(body, status)
		body = append(body, '}')
	}
	query := url.Values{c.listParam(): {strconv.FormatInt(listID, 10)}}
	if status != "" {
		// Both places: the seed puts it in the body, the public PHP client in the query.
		query.Set("status", status)
	}
	var id int64
	err := c.sendListed(query, func(q url.Values) error {
		cl := &call{method: http.MethodPost, route: "/subscribers", path: "/subscribers", body: body, query: q}
		resp, err := c.do(ctx, cl)
		if err != nil {
			return err
		}
		a, err := c.checkAck(cl, resp)
		id = int64(a.ID)
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// Unsubscribe unsubscribes a subscriber (POST /subscribers/{id}/unsubscribe).
func (c *Client) Unsubscribe(ctx context.Context, id int64) error {
	return c.ackCall(ctx, &call{method: http.MethodPost, route: "/subscribers/{id}/unsubscribe", path: subscriberPath(id) + "/unsubscribe"})
}

// DeleteSubscriber deletes a subscriber (DELETE /subscribers/{id}).
func (c *Client) DeleteSubscriber(ctx context.Context, id int64) error {
	return c.ackCall(ctx, &call{method: http.MethodDelete, route: "/subscribers/{id}", path: subscriberPath(id)})
}

// MaxPerPage is the largest page SubscribersByList may ask for.
const MaxPerPage = 1000

// ByListQuery selects one page of a list's subscribers. Zero fields are omitted.
type ByListQuery struct {
	ListID       int64
	Page         int // 1-based
	PerPage      int // at most MaxPerPage
	Status       string
	UpdatedAfter time.Time
}

// SubscribersByList fetches one page of a list's subscribers
// (GET /subscribers/by_list?list_id=&page=&per_page=&status=&updated_after=).
// A page shorter than PerPage is the last one.
func (c *Client) SubscribersByList(ctx context.Context, q ByListQuery) ([]SubscriberRecord, error) {
	if q.ListID <= 0 || q.Page < 0 || q.PerPage < 0 || q.PerPage > MaxPerPage {
		return nil, fmt.Errorf("subscribers by list: %w: list %d page %d per_page %d (list > 0, per_page ≤ %d)",
			ErrInvalidInput, q.ListID, q.Page, q.PerPage, MaxPerPage)
	}
	query := url.Values{"list_id": {strconv.FormatInt(q.ListID, 10)}}
	if q.Page > 0 {
		query.Set("page", strconv.Itoa(q.Page))
	}
	if q.PerPage > 0 {
		query.Set("per_page", strconv.Itoa(q.PerPage))
	}
	if q.Status != "" {
		query.Set("status", q.Status)
	}
	if !q.UpdatedAfter.IsZero() {
		query.Set("updated_after", formatTime(q.UpdatedAfter))
	}
	cl := &call{method: http.MethodGet, route: "/subscribers/by_list", path: "/subscribers/by_list", query: query}
	return c.records(ctx, cl)
}

// SubscriberByEmail finds the subscriber with this e-mail (POST /subscribers/by_email with
// {"email": …}, as public clients call it). found is false when the service answers 404.
func (c *Client) SubscriberByEmail(ctx context.Context, email string) (rec SubscriberRecord, found bool, err error) {
	if strings.TrimSpace(email) == "" {
		return rec, false, fmt.Errorf("subscriber by e-mail: %w: the e-mail is empty", ErrInvalidInput)
	}
	body, err := json.Marshal(struct {
		Email string `json:"email"`
	}{strings.TrimSpace(email)})
	if err != nil {
		return rec, false, fmt.Errorf("subscriber by e-mail: %w", err)
	}
	cl := &call{method: http.MethodPost, route: "/subscribers/by_email", path: "/subscribers/by_email", body: body}
	resp, err := c.do(ctx, cl)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if err := c.decodeJSON(cl, resp, &rec); err != nil {
		return rec, false, err
	}
	if rec.ID == 0 {
		return rec, false, fmt.Errorf("%s %s: the response holds no subscriber id", cl.method, cl.path)
	}
	return rec, true, nil
}

func (c *Client) records(ctx context.Context, cl *call) ([]SubscriberRecord, error) {
	return fetchArray[SubscriberRecord](ctx, c, cl)
}

func subscriberPath(id int64) string { return "/subscribers/" + strconv.FormatInt(id, 10) }
