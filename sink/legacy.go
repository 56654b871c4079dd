package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// LegacySubscriber is a subscriber as the legacy (v3) interface shows it. The legacy names
// differ from v2: company is Firm, phone is Mobile, EXTRA<n> is extra<n>, date custom fields
// are extra_date<n>.
type LegacySubscriber struct {
	ID        int64
	Email     string
	Firstname string
	Lastname  string
	Address   string
	Zip       string
	City      string
	Phone     string
	Mobile    string
	Firm      string
	Age       string
	Gender    string
	// Extra holds the non-empty extra1..extra15 and extra_date1..extra_date5 values, by their
	// legacy names.
	Extra       map[string]string
	DateCreated string
	DateUpdated string
}

// UnmarshalJSON reads the legacy representation tolerantly (numbers and nulls as text).
func (s *LegacySubscriber) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	str := func(k string) string { return rawText(raw[k]) }
	var id flexInt
	if v, ok := raw["id"]; ok {
		if err := id.UnmarshalJSON(v); err != nil {
			return fmt.Errorf("subscriber id: %w", err)
		}
	}
	out := LegacySubscriber{
		ID: int64(id), Email: str("email"), Firstname: str("firstname"), Lastname: str("lastname"),
		Address: str("address"), Zip: str("zip"), City: str("city"), Phone: str("phone"), Mobile: str("mobile"),
		Firm: str("firm"), Age: str("age"), Gender: str("gender"),
		DateCreated: str("date_created"), DateUpdated: str("date_updated"),
	}
	for k, v := range raw {
		if !strings.HasPrefix(strings.ToLower(k), "extra") {
			continue
		}
		if text := rawText(v); text != "" {
			if out.Extra == nil {
				out.Extra = make(map[string]string)
			}
			out.Extra[k] = text
		}
	}
	*s = out
	return nil
}

// LegacySubscriber shows a subscriber through the legacy interface (GET /subscribers/:id).
// It returns ErrNoLegacyURL when Config.LegacyBaseURL is empty.
func (c *Client) LegacySubscriber(ctx context.Context, id int64) (LegacySubscriber, error) {
	cl := &call{method: http.MethodGet, route: "/subscribers/{id}", path: subscriberPath(id), legacy: true}
	resp, err := c.do(ctx, cl)
	if err != nil {
		return LegacySubscriber{}, err
	}
	var s LegacySubscriber
	if err := c.decodeJSON(cl, resp, &s); err != nil {
		return LegacySubscriber{}, err
	}
	return s, nil
}

// LegacyDeleteList deletes a list through the legacy interface (DELETE /subscriberlists/:id).
func (c *Client) LegacyDeleteList(ctx context.Context, id int64) error {
	return c.ackCall(ctx, &call{method: http.MethodDelete, route: "/subscriberlists/{id}", path: listPath(id), legacy: true})
}

// LegacyDeleteSubscriber deletes a subscriber through the legacy interface
// (DELETE /subscribers/:id).
func (c *Client) LegacyDeleteSubscriber(ctx context.Context, id int64) error {
	return c.ackCall(ctx, &call{method: http.MethodDelete, route: "/subscribers/{id}", path: subscriberPath(id), legacy: true})
}
