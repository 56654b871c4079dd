package sinktest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink/sinktest"
)

// clock is a settable clock for WithClock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// testBundle is a running emulator and plain net/http helpers to talk to it.
type testBundle struct {
	t     *testing.T
	srv   *sinktest.Server
	clock *clock
}

// with returns the bundle for use in a subtest.
func (b *testBundle) with(t *testing.T) *testBundle {
	c := *b
	c.t = t
	return &c
}

// setup starts an emulator with WithRowMessages on (these tests check its reasons; a later
// option may turn it off).
func setup(t *testing.T, opts ...sinktest.Option) *testBundle {
	opts = append([]sinktest.Option{sinktest.WithRowMessages(true)}, opts...)
	t.Helper()
	c := newClock()
	srv := sinktest.NewServer(t, append([]sinktest.Option{sinktest.WithClock(c.Now)}, opts...)...)
	return &testBundle{t: t, srv: srv, clock: c}
}

type response struct {
	status int
	header http.Header
	body   string
}

// json decodes the body into a fresh value of type T.
func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(r.body), &v), "body %s", r.body)
	return v
}

func (b *testBundle) request(method, url, user, key, body string) response {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(b.t, err)
	if user != "" || key != "" {
		req.SetBasicAuth(user, key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := b.srv.Client().Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

// v2 sends an authenticated request to the v2 interface.
func (b *testBundle) v2(method, path, body string) response {
	b.t.Helper()
	return b.request(method, b.srv.URL+path, b.srv.User, b.srv.Key, body)
}

// v3 sends an authenticated request to the legacy interface.
func (b *testBundle) v3(method, path string) response {
	b.t.Helper()
	return b.request(method, b.srv.LegacyURL+path, b.srv.User, b.srv.Key, "")
}

// ok sends a v2 request and requires a 200.
func (b *testBundle) ok(method, path, body string) response {
	b.t.Helper()
	r := b.v2(method, path, body)
	require.Equal(b.t, http.StatusOK, r.status, "%s %s: body %s", method, path, r.body)
	return r
}

type listOut struct {
	ID               int64  `json:"id"`
	Title            string `json:"title"`
	DateCreated      string `json:"date_created"`
	DateUpdated      string `json:"date_updated"`
	SubscriberEmails int    `json:"subscriber_emails"`
	SubscriberSMS    int    `json:"subscriber_sms"`
}

type fieldOut struct {
	ID       int64    `json:"id"`
	Label    string   `json:"label"`
	Value    string   `json:"value"`
	Datatype string   `json:"datatype"`
	Choices  []string `json:"choices"`
}

type statusOut struct {
	ID               int64   `json:"id"`
	Email            string  `json:"email"`
	Phone            *string `json:"phone"`
	Status           string  `json:"status"`
	StatusMobile     string  `json:"status_mobile"`
	SubscriberListID int64   `json:"subscriber_list_id"`
	DateUpdated      string  `json:"date_updated"`
}

func (b *testBundle) createList(title string) listOut {
	b.t.Helper()
	return decode[listOut](b.t, b.ok("POST", "/subscriberlists", `{"title":`+jsonString(title)+`}`))
}

func (b *testBundle) list(id int64) listOut {
	b.t.Helper()
	return decode[listOut](b.t, b.ok("GET", "/subscriberlists/"+itoa(id), ""))
}

func (b *testBundle) bulk(query, body string) response {
	b.t.Helper()
	return b.v2("POST", "/subscribers/bulkinsert?"+query, body)
}

func (b *testBundle) status(email string, list int64) string {
	b.t.Helper()
	s, ok := b.srv.SubscriberByEmail(email)
	require.True(b.t, ok, "subscriber %s", email)
	return s.Lists[list].Status
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }
