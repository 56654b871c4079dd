package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// List is a mailing list of the service.
type List struct {
	ID               int64  `json:"id"`
	Title            string `json:"title"`
	DateCreated      string `json:"date_created"`
	DateUpdated      string `json:"date_updated"`
	SubscriberEmails int    `json:"subscriber_emails"`
	SubscriberSMS    int    `json:"subscriber_sms"`
}

// UnmarshalJSON reads a list tolerantly: ids and counts may come as numbers or strings.
func (l *List) UnmarshalJSON(b []byte) error {
	var w struct {
		ID               flexInt    `json:"id"`
		Title            flexString `json:"title"`
		DateCreated      flexString `json:"date_created"`
		DateUpdated      flexString `json:"date_updated"`
		SubscriberEmails flexInt    `json:"subscriber_emails"`
		SubscriberSMS    flexInt    `json:"subscriber_sms"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = List{
		ID: int64(w.ID), Title: string(w.Title), DateCreated: string(w.DateCreated), DateUpdated: string(w.DateUpdated),
		SubscriberEmails: int(w.SubscriberEmails), SubscriberSMS: int(w.SubscriberSMS),
	}
	return nil
}

// Lists fetches all lists (GET /subscriberlists).
func (c *Client) Lists(ctx context.Context) ([]List, error) {
	return fetchArray[List](ctx, c, &call{method: http.MethodGet, route: "/subscriberlists", path: "/subscriberlists"})
}

// List shows one list (GET /subscriberlists/{id}).
func (c *Client) List(ctx context.Context, id int64) (List, error) {
	return c.listCall(ctx, &call{method: http.MethodGet, route: "/subscriberlists/{id}", path: listPath(id)})
}

// CreateList creates a list (POST /subscriberlists) and returns it as the service holds it.
func (c *Client) CreateList(ctx context.Context, title string) (List, error) {
	if strings.TrimSpace(title) == "" {
		return List{}, fmt.Errorf("create list: %w: the title is empty", ErrInvalidInput)
	}
	return c.listCall(ctx, &call{method: http.MethodPost, route: "/subscriberlists", path: "/subscriberlists", body: titleBody(title)})
}

// UpdateList renames a list (PATCH /subscriberlists/{id}).
func (c *Client) UpdateList(ctx context.Context, id int64, title string) (List, error) {
	if strings.TrimSpace(title) == "" {
		return List{}, fmt.Errorf("update list %d: %w: the title is empty", id, ErrInvalidInput)
	}
	return c.listCall(ctx, &call{method: http.MethodPatch, route: "/subscriberlists/{id}", path: listPath(id), body: titleBody(title)})
}

// DeleteList deletes a list (DELETE /subscriberlists/{id}).
func (c *Client) DeleteList(ctx context.Context, id int64) error {
	return c.ackCall(ctx, &call{method: http.MethodDelete, route: "/subscriberlists/{id}", path: listPath(id)})
}

func (c *Client) listCall(ctx context.Context, cl *call) (List, error) {
	return fetchObject(ctx, c, cl, "list", func(l List) int64 { return l.ID })
}

// ackCall runs a call whose success answer is an acknowledgement.
func (c *Client) ackCall(ctx context.Context, cl *call) error {
	resp, err := c.do(ctx, cl)
	if err != nil {
		return err
	}
	_, err = c.checkAck(cl, resp)
	return err
}

func listPath(id int64) string { return "/subscriberlists/" + strconv.FormatInt(id, 10) }

func titleBody(title string) []byte {
	b := append([]byte(`{"title":`), appendString(nil, title)...)
	return append(b, '}')
}
