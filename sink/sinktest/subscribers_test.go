package sinktest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink/sinktest"
)

// statusSetup makes a list holding active@, unsub@ (unsubscribed) and bounce@ (bounced).
func statusSetup(t *testing.T, opts ...sinktest.Option) (*testBundle, string) {
	b := setup(t, opts...)
	q := "subscriber_list_id=" + itoa(b.createList("L").ID)
	b.ok("POST", "/subscribers/bulkinsert?"+q, `[{"email":"active@example.com"},{"email":"unsub@example.com"},{"email":"bounce@example.com"}]`)
	b.ok("POST", "/subscribers/bulkinsert?"+q+"&status=unsubscribed", `[{"email":"unsub@example.com"}]`)
	b.ok("POST", "/subscribers/bulkinsert?"+q+"&status=bounce", `[{"email":"bounce@example.com"}]`)
	return b, q
}

func TestBulkStatusActiveDoesNotRevive(t *testing.T) {
	t.Parallel()
	b, q := statusSetup(t)
	rows := `[{"email":"active@example.com"},{"email":"unsub@example.com"},{"email":"bounce@example.com"},{"email":"new@example.com"}]`

	// Without status: existing keep their status, new ones are active.
	b.ok("POST", "/subscribers/bulkinsert?"+q, rows)
	require.Equal(t, []string{"active", "unsubscribed", "bounce", "active"}, statuses(b, 1))

	// status=active does not revive.
	b.ok("POST", "/subscribers/bulkinsert?"+q+"&status=active", rows)
	require.Equal(t, []string{"active", "unsubscribed", "bounce", "active"}, statuses(b, 1))

	// reactivate does.
	b.ok("POST", "/subscribers/bulkinsert?"+q+"&status=reactivate", `[{"email":"unsub@example.com"}]`)
	require.Equal(t, []string{"active", "active", "bounce", "active"}, statuses(b, 1))
}

func TestBulkStatusActiveRevivesWhenSwitched(t *testing.T) {
	t.Parallel()
	b, q := statusSetup(t, sinktest.WithActiveRevives(true))
	b.ok("POST", "/subscribers/bulkinsert?"+q+"&status=active", `[{"email":"unsub@example.com"},{"email":"bounce@example.com"}]`)
	require.Equal(t, []string{"active", "active", "active"}, statuses(b, 1))
}

func statuses(b *testBundle, list int64) []string {
	var out []string
	for _, s := range b.srv.ListSubscribers(list) {
		out = append(out, s.Lists[list].Status)
	}
	return out
}

func TestSingleCreateUpsertsByEmail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.createList("L")
	q := "/subscribers?subscriber_list_id=" + itoa(l.ID)
	r := b.ok("POST", q, `{"email":"Ann@Example.com","firstname":"Ann"}`)
	require.JSONEq(t, `{"status":"200 Success","id":1}`, r.body)
	r = b.ok("POST", q, `{"email":" ann@example.com ","lastname":"Lee","status":"unsubscribed"}`)
	require.JSONEq(t, `{"status":"200 Success","id":1}`, r.body, "same e-mail, same subscriber")
	s, ok := b.srv.SubscriberByEmail("ANN@example.com")
	require.True(t, ok)
	require.Equal(t, map[string]string{"firstname": "Ann", "lastname": "Lee"}, s.Fields)
	require.Equal(t, "unsubscribed", s.Lists[l.ID].Status)
	// Omitted status keeps it; a given status is applied as given (the spec), active included.
	b.ok("POST", q, `{"email":"ann@example.com"}`)
	require.Equal(t, "unsubscribed", b.status("ann@example.com", l.ID))
	b.ok("POST", q, `{"email":"ann@example.com","status":"active"}`)
	require.Equal(t, "active", b.status("ann@example.com", l.ID))
}

func TestTagsReplaceAndMerge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q := "subscriber_list_id=" + itoa(b.createList("L").ID)
	tags := func() []string {
		s, _ := b.srv.SubscriberByEmail("t@example.com")
		return s.Tags
	}
	b.ok("POST", "/subscribers/bulkinsert?"+q, `[{"email":"t@example.com","tags":["a","b"]}]`)
	require.Equal(t, []string{"a", "b"}, tags())
	b.ok("POST", "/subscribers/bulkinsert?"+q+"&tag=merge", `[{"email":"t@example.com","tags":["b","c"]}]`)
	require.Equal(t, []string{"a", "b", "c"}, tags())
	b.ok("POST", "/subscribers/bulkinsert?"+q, `[{"email":"t@example.com","firstname":"T"}]`)
	require.Equal(t, []string{"a", "b", "c"}, tags(), "a row without tags leaves them")
	b.ok("POST", "/subscribers/bulkinsert?"+q+"&tag=replace", `[{"email":"t@example.com","tags":["d"]}]`)
	require.Equal(t, []string{"d"}, tags())
}

func TestEmptyValuesDoNotClear(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q := "subscriber_list_id=" + itoa(b.createList("L").ID)
	b.ok("POST", "/subscribers/bulkinsert?"+q, `[{"email":"e@example.com","firstname":"Eva","city":"Oslo"}]`)
	b.ok("POST", "/subscribers/bulkinsert?"+q, `[{"email":"e@example.com","firstname":"","city":null,"zip":"0150"}]`)
	s, _ := b.srv.SubscriberByEmail("e@example.com")
	require.Equal(t, map[string]string{"firstname": "Eva", "city": "Oslo", "zip": "0150"}, s.Fields)
}

func TestShowSubscriberV2Shape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.createList("L")
	b.srv.CreateCustomField("Score", "number")
	b.srv.CreateCustomField("Joined", "date")
	b.ok("POST", "/subscribers/bulkinsert?subscriber_list_id="+itoa(l.ID), `[{"email":"s@example.com","firstname":"Sam","EXTRA2":"2024-01-31","SAMTYKKESMS":"yes","external_id":"CRM-7"}]`)
	r := b.ok("GET", "/subscribers/1", "")
	require.JSONEq(t, `{"id":1,"email":"s@example.com","firstname":"Sam","lastname":"","address":"","zip":"","city":"",
		"phone":null,"company":"","birthday":null,"gender":"","date_created":"2025-03-10T12:00:00.000Z",
		"date_updated":"2025-03-10T12:00:00.000Z","SAMTYKKEEPOST":null,"SAMTYKKESMS":"yes","SAMTYKKEEPOSTOGSMS":null,
		"PERSONVERNERKLRING":null,"external_id":"CRM-7","EXTRA1":null,"EXTRA2":"2024-01-31"}`, r.body)
	require.Equal(t, http.StatusMethodNotAllowed, b.v2("PATCH", "/subscribers/1", `{"email":"x@example.com"}`).status)
}

func TestByListAndByEmail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.createList("L")
	q := "subscriber_list_id=" + itoa(l.ID)
	b.ok("POST", "/subscribers/bulkinsert?"+q, `[{"email":"a@example.com"},{"email":"b@example.com"},{"email":"c@example.com"}]`)
	b.clock.Set(time.Date(2025, 3, 12, 0, 0, 0, 0, time.UTC))
	b.ok("POST", "/subscribers/bulkinsert?"+q+"&status=unsubscribed", `[{"email":"b@example.com"},{"email":"d@example.com"}]`)

	emails := func(r response) []string {
		var out []string
		for _, s := range decode[[]map[string]any](t, r) {
			out = append(out, s["email"].(string))
		}
		return out
	}
	base := "/subscribers/by_list?list_id=" + itoa(l.ID)
	require.Equal(t, []string{"a@example.com", "b@example.com", "c@example.com", "d@example.com"}, emails(b.ok("GET", base, "")))
	require.Equal(t, []string{"c@example.com", "d@example.com"}, emails(b.ok("GET", base+"&page=2&per_page=2", "")))
	require.Empty(t, emails(b.ok("GET", base+"&page=3&per_page=2", "")))
	require.Equal(t, []string{"b@example.com", "d@example.com"}, emails(b.ok("GET", base+"&status=unsubscribed", "")))
	require.Equal(t, []string{"b@example.com", "d@example.com"}, emails(b.ok("GET", base+"&updated_after=2025-03-11T00:00:00Z", "")))
	require.Equal(t, http.StatusUnprocessableEntity, b.v2("GET", base+"&per_page=1001", "").status)
	require.Equal(t, http.StatusUnprocessableEntity, b.v2("GET", "/subscribers/by_list", "").status)

	one := decode[map[string]any](t, b.ok("POST", "/subscribers/by_email", `{"email":" C@example.com"}`))
	require.Equal(t, "c@example.com", one["email"])
	r := b.v2("POST", "/subscribers/by_email", `{"email":"nobody@example.com"}`)
	require.Equal(t, http.StatusNotFound, r.status)
	require.JSONEq(t, `{"status":"404 Not found"}`, r.body)
	require.Equal(t, http.StatusUnprocessableEntity, b.v2("POST", "/subscribers/by_email", `{"emails":["a@example.com"]}`).status)
}
