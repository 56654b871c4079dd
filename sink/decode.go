package sink

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// apiError builds the *APIError of a failed response. Only the status code decides what
// happens next; the body only adds words.
func (c *Client) apiError(cl *call, status int, header http.Header, body []byte) *APIError {
	e := &APIError{
		Method:     cl.method,
		Path:       cl.path,
		Legacy:     cl.legacy,
		StatusCode: status,
		Body:       excerpt(c.redact(string(body)), bodyExcerptLimit),
		RetryAfter: parseRetryAfter(header.Get("Retry-After"), time.Now()),
	}
	switch {
	case looksJSON(body):
		var fields struct {
			Status  json.RawMessage `json:"status"`
			Message json.RawMessage `json:"message"`
			Error   json.RawMessage `json:"error"`
		}
		if json.Unmarshal(body, &fields) == nil {
			e.Status = c.redact(rawText(fields.Status))
			e.Message = c.redact(cmp.Or(rawText(fields.Message), rawText(fields.Error)))
		}
	case len(bytes.TrimSpace(body)) > 0:
		e.rawBody = true
		e.Message = c.unexpectedBody(status, header, body)
	}
	return e
}

// unexpectedBody describes a body that should have been JSON:
// "unexpected text/html response (HTTP 502): <first bytes>".
func (c *Client) unexpectedBody(status int, header http.Header, body []byte) string {
	kind := "non-JSON"
	if mt, _, err := mime.ParseMediaType(header.Get("Content-Type")); err == nil && mt != "" {
		kind = mt
	}
	text := strings.Join(strings.Fields(c.redact(string(body))), " ")
	return fmt.Sprintf("unexpected %s response (HTTP %d): %s", kind, status, excerpt(text, 200))
}

// decodeJSON decodes a 2xx response body into v.
func (c *Client) decodeJSON(cl *call, resp response, v any) error {
	if !looksJSON(resp.body) {
		if len(bytes.TrimSpace(resp.body)) == 0 {
			return fmt.Errorf("%s %s: empty response (HTTP %d), want JSON", cl.method, cl.path, resp.status)
		}
		return fmt.Errorf("%s %s: %s", cl.method, cl.path, c.unexpectedBody(resp.status, resp.header, resp.body))
	}
	if err := json.Unmarshal(resp.body, v); err != nil {
		return fmt.Errorf("%s %s: decode response (HTTP %d): %w", cl.method, cl.path, resp.status, err)
	}
	return nil
}

// ack is the service's acknowledgement, {"status":"200 Success"}, sometimes with an id.
type ack struct {
	Status  json.RawMessage `json:"status"`
	Message json.RawMessage `json:"message"`
	ID      flexInt         `json:"id"`
}

// checkAck reads an acknowledgement. An empty body (a 204, say) or a JSON array is accepted
// as is; a body that is not JSON is an error. An ack whose
// status carries a failure code ("422 Unprocessable entity" inside an HTTP 200) is treated
// as that failure, so a service that reports errors only in the body is still understood.
func (c *Client) checkAck(cl *call, resp response) (ack, error) {
	var a ack
	if trimmed := bytes.TrimSpace(resp.body); len(trimmed) == 0 || trimmed[0] == '[' {
		return a, nil // nothing to check: the status said it all
	}
	if err := c.decodeJSON(cl, resp, &a); err != nil {
		return a, err
	}
	status := rawText(a.Status)
	if code, ok := leadingCode(status); ok && code >= 400 {
		return a, &APIError{
			Method: cl.method, Path: cl.path, Legacy: cl.legacy, StatusCode: code,
			Status:  c.redact(status),
			Message: c.redact(rawText(a.Message)),
			Body:    excerpt(c.redact(string(resp.body)), bodyExcerptLimit),
		}
	}
	return a, nil
}

// leadingCode reads the number a status string starts with: "422 Unprocessable entity" → 422.
func leadingCode(s string) (int, bool) {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end != 3 {
		return 0, false
	}
	code, err := strconv.Atoi(s[:end])
	return code, err == nil
}

// looksJSON reports whether body starts like a JSON object or array. Content-Type is not
// trusted either way: JSON sent as text/plain is read, HTML sent as application/json is not.
func looksJSON(body []byte) bool {
	body = bytes.TrimLeft(body, " \t\r\n\ufeff")
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	return len(body) > 0 && (body[0] == '{' || body[0] == '[')
}

// excerpt cuts s to at most n bytes on a rune boundary, marking the cut.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "\uFFFD") + "…"
}

// rawText renders a JSON value as text: a string as itself, null as "", others as written.
func rawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// flexString decodes a JSON string, number or boolean as text; null as "".
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	*f = flexString(rawText(b))
	return nil
}

// flexNullString decodes like flexString but keeps null apart from "".
type flexNullString struct {
	s     string
	valid bool
}

func (f *flexNullString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*f = flexNullString{}
		return nil
	}
	*f = flexNullString{s: rawText(b), valid: true}
	return nil
}

func (f flexNullString) ptr() *string {
	if !f.valid {
		return nil
	}
	s := f.s
	return &s
}

// flexInt decodes a JSON number or a numeric string; null or "" as 0.
type flexInt int64

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(rawText(b))
	if s == "" {
		*f = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		fl, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || fl != float64(int64(fl)) {
			return fmt.Errorf("not an integer: %s", excerpt(string(b), 40))
		}
		n = int64(fl)
	}
	*f = flexInt(n)
	return nil
}

// arrayKeys are the object members, in order of preference, that may hold the array of a
// collection response when the service wraps it in an object.
var arrayKeys = []string{"data", "items", "results", "changes", "subscribers", "lists", "custom_fields"}

// unwrapArray returns the JSON array of a collection response: body itself when it is an
// array, or the one array an object holds ({"changes":[...]}, {"data":[...],"total":3}).
func unwrapArray(body []byte) (json.RawMessage, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return trimmed, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, err
	}
	var arrays []string
	for k, v := range obj {
		if v = bytes.TrimSpace(v); len(v) > 0 && v[0] == '[' {
			arrays = append(arrays, k)
		}
	}
	switch len(arrays) {
	case 0:
		return nil, errors.New("the object holds no array")
	case 1:
		return obj[arrays[0]], nil
	}
	for _, k := range arrayKeys {
		if v, ok := obj[k]; ok && bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
			return v, nil
		}
	}
	return nil, fmt.Errorf("the object holds %d arrays (%s), want one", len(arrays), strings.Join(arrays, ", "))
}

// fetchArray makes the call and decodes its collection response (see unwrapArray).
func fetchArray[T any](ctx context.Context, c *Client, cl *call) ([]T, error) {
	resp, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	var out []T
	if err := c.decodeArray(cl, resp, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// fetchObject makes the call and decodes its response, one resource that must carry an id
// (what names the resource in the error when it does not).
func fetchObject[T any](ctx context.Context, c *Client, cl *call, what string, id func(T) int64) (T, error) {
	var v, zero T
	resp, err := c.do(ctx, cl)
	if err != nil {
		return zero, err
	}
	if err := c.decodeJSON(cl, resp, &v); err != nil {
		return zero, err
	}
	if id(v) == 0 {
		return zero, fmt.Errorf("%s %s: the response holds no %s id", cl.method, cl.path, what)
	}
	return v, nil
}

// decodeArray decodes a collection response (see unwrapArray) into v, a pointer to a slice.
func (c *Client) decodeArray(cl *call, resp response, v any) error {
	if !looksJSON(resp.body) {
		return c.decodeJSON(cl, resp, v) // reports the unexpected body
	}
	arr, err := unwrapArray(resp.body)
	if err == nil {
		err = json.Unmarshal(arr, v)
	}
	if err != nil {
		return fmt.Errorf("%s %s: decode response (HTTP %d): %w", cl.method, cl.path, resp.status, err)
	}
	return nil
}

// timeLayouts are the timestamp forms accepted from the service, tried in order.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999 -0700",
	"2006-01-02 15:04:05.999999999 -0700 MST",
	"2006-01-02",
}

// parseTime reads a service timestamp, with or without fraction and zone (no zone = UTC).
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("unrecognised timestamp %q", excerpt(s, 40))
}

// formatTime writes a timestamp as the service does: ISO 8601 UTC with milliseconds.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
