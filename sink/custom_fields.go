package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Custom field data types, fixed when a field is created.
const (
	DatatypeString         = "string"
	DatatypeNumber         = "number"
	DatatypeDate           = "date"
	DatatypeSingleChoice   = "single_choice"
	DatatypeMultipleChoice = "multiple_choice"
	DatatypeDropdown       = "dropdown"
)

// CustomField is an account-defined subscriber attribute, stored in slot Value (EXTRA<n>).
type CustomField struct {
	ID       int64    `json:"id"`
	Label    string   `json:"label"`
	Value    string   `json:"value"` // the slot, EXTRA<n>, assigned by the service
	Datatype string   `json:"datatype"`
	Choices  []string `json:"choices,omitempty"`
}

// UnmarshalJSON reads a custom field tolerantly: the id may be a string, choices may be
// null, numbers or a comma-separated string.
func (f *CustomField) UnmarshalJSON(b []byte) error {
	var w struct {
		ID       flexInt         `json:"id"`
		Label    flexString      `json:"label"`
		Value    flexString      `json:"value"`
		Datatype flexString      `json:"datatype"`
		Choices  json.RawMessage `json:"choices"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*f = CustomField{ID: int64(w.ID), Label: string(w.Label), Value: string(w.Value), Datatype: string(w.Datatype)}
	switch raw := strings.TrimSpace(string(w.Choices)); {
	case raw == "" || raw == "null":
	case raw[0] == '[':
		var items []flexString
		if err := json.Unmarshal(w.Choices, &items); err != nil {
			return fmt.Errorf("custom field %d choices: %w", f.ID, err)
		}
		for _, it := range items {
			f.Choices = append(f.Choices, string(it))
		}
	default:
		for _, it := range strings.Split(rawText(w.Choices), ",") {
			if it = strings.TrimSpace(it); it != "" {
				f.Choices = append(f.Choices, it)
			}
		}
	}
	return nil
}

// CustomFields fetches all custom fields (GET /custom_fields).
func (c *Client) CustomFields(ctx context.Context) ([]CustomField, error) {
	return fetchArray[CustomField](ctx, c, &call{method: http.MethodGet, route: "/custom_fields", path: "/custom_fields"})
}

// CustomField shows one custom field (GET /custom_fields/{id}).
func (c *Client) CustomField(ctx context.Context, id int64) (CustomField, error) {
	return c.fieldCall(ctx, &call{method: http.MethodGet, route: "/custom_fields/{id}", path: fieldPath(id)})
}

// CreateCustomField creates a custom field (POST /custom_fields), sending f's label,
// datatype and, when given, choices. The service assigns the next EXTRA<n> slot, returned
// in Value.
func (c *Client) CreateCustomField(ctx context.Context, f CustomField) (CustomField, error) {
	if strings.TrimSpace(f.Label) == "" || f.Datatype == "" {
		return CustomField{}, fmt.Errorf("create custom field: %w: label and datatype are required", ErrInvalidInput)
	}
	body := struct {
		Label    string   `json:"label"`
		Datatype string   `json:"datatype"`
		Choices  []string `json:"choices,omitempty"`
	}{f.Label, f.Datatype, f.Choices}
	raw, err := json.Marshal(body)
	if err != nil {
		return CustomField{}, fmt.Errorf("create custom field: %w", err)
	}
	return c.fieldCall(ctx, &call{method: http.MethodPost, route: "/custom_fields", path: "/custom_fields", body: raw})
}

// UpdateCustomField renames a custom field (PATCH /custom_fields/{id}); the datatype cannot
// change.
func (c *Client) UpdateCustomField(ctx context.Context, id int64, label string) (CustomField, error) {
	if strings.TrimSpace(label) == "" {
		return CustomField{}, fmt.Errorf("update custom field %d: %w: the label is empty", id, ErrInvalidInput)
	}
	body := append(append([]byte(`{"label":`), appendString(nil, label)...), '}')
	return c.fieldCall(ctx, &call{method: http.MethodPatch, route: "/custom_fields/{id}", path: fieldPath(id), body: body})
}

// DeleteCustomField deletes a custom field (DELETE /custom_fields/{id}).
func (c *Client) DeleteCustomField(ctx context.Context, id int64) error {
	return c.ackCall(ctx, &call{method: http.MethodDelete, route: "/custom_fields/{id}", path: fieldPath(id)})
}

func (c *Client) fieldCall(ctx context.Context, cl *call) (CustomField, error) {
	return fetchObject(ctx, c, cl, "custom field", func(f CustomField) int64 { return f.ID })
}

func fieldPath(id int64) string { return "/custom_fields/" + strconv.FormatInt(id, 10) }
