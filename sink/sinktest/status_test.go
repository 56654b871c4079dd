package sinktest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink/sinktest"
)

// feedSetup records changes on 1 Mar, 5 Mar and 9 Mar 2025 (clock at 10 Mar): a bulk
// unsubscribe, a bounce set by the service, and an unsubscribe through the endpoint.
func feedSetup(t *testing.T, opts ...sinktest.Option) *testBundle {
	b := setup(t, opts...)
	l := b.createList("L")
	q := "subscriber_list_id=" + itoa(l.ID)
	b.clock.Set(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	b.ok("POST", "/subscribers/bulkinsert?"+q, `[{"email":"a@example.com","phone":"+4711111111"},{"email":"b@example.com"},{"email":"c@example.com"}]`)
	b.clock.Set(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	b.ok("POST", "/subscribers/bulkinsert?"+q+"&status=unsubscribed", `[{"email":"a@example.com"}]`)
	b.clock.Set(time.Date(2025, 3, 5, 10, 0, 0, 0, time.UTC))
	require.NoError(t, b.srv.SetStatus("b@example.com", l.ID, "bounce"))
	b.clock.Set(time.Date(2025, 3, 9, 10, 0, 0, 0, time.UTC))
	c, _ := b.srv.SubscriberByEmail("c@example.com")
	b.ok("POST", "/subscribers/"+itoa(c.ID)+"/unsubscribe", "")
	b.clock.Set(time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC))
	return b
}

func feedEmails(changes []statusOut) []string {
	var out []string
	for _, c := range changes {
		out = append(out, c.Email+" "+c.Status)
	}
	return out
}

func TestStatusFeed(t *testing.T) {
	t.Parallel()
	b := feedSetup(t)
	all := decode[[]statusOut](t, b.ok("GET", "/subscriberstatus", ""))
	require.Equal(t, []string{"a@example.com unsubscribed", "b@example.com bounce", "c@example.com unsubscribed"}, feedEmails(all),
		"oldest first; new active memberships are not changes")
	phone := "+4711111111"
	require.Equal(t, statusOut{ID: 1, Email: "a@example.com", Phone: &phone, Status: "unsubscribed", StatusMobile: "active",
		SubscriberListID: 1, DateUpdated: "2025-03-01T10:00:00.000Z"}, all[0])
	require.Nil(t, all[1].Phone)

	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"?from_date=2025-03-05", []string{"b@example.com bounce", "c@example.com unsubscribed"}},
		{"?from_date=2025-03-05T10:00:00.001Z", []string{"c@example.com unsubscribed"}},
		{"?from_date=2025-03-01&to_date=2025-03-05", []string{"a@example.com unsubscribed", "b@example.com bounce"}},
		{"?from_date=2025-03-01T00:00:00Z&to_date=2025-03-05T09:59:59Z", []string{"a@example.com unsubscribed"}},
		{"?to_date=2025-03-04", []string{"a@example.com unsubscribed"}},
		{"?from_date=2025-03-10", nil},
	} {
		got := decode[[]statusOut](t, b.ok("GET", "/subscriberstatus"+tt.query, ""))
		require.Equal(t, tt.want, feedEmails(got), tt.query)
	}
	r := b.v2("GET", "/subscriberstatus?from_date=yesterday", "")
	require.Equal(t, http.StatusUnprocessableEntity, r.status)

	// Without from_date the window is the last 30 days.
	b.clock.Set(time.Date(2025, 4, 3, 10, 0, 0, 0, time.UTC))
	got := decode[[]statusOut](t, b.ok("GET", "/subscriberstatus", ""))
	require.Equal(t, []string{"b@example.com bounce", "c@example.com unsubscribed"}, feedEmails(got))
}

func TestStatusFeedWrapped(t *testing.T) {
	t.Parallel()
	b := feedSetup(t, sinktest.WithStatusWrapped(true))
	got := decode[struct{ Changes []statusOut }](t, b.ok("GET", "/subscriberstatus?from_date=2025-03-05", ""))
	require.Equal(t, []string{"b@example.com bounce", "c@example.com unsubscribed"}, feedEmails(got.Changes))
}

func TestSetStatus(t *testing.T) {
	t.Parallel()
	b := feedSetup(t)
	require.ErrorIs(t, b.srv.SetStatus("nobody@example.com", 1, "bounce"), sinktest.ErrNotFound)
	require.ErrorIs(t, b.srv.SetStatus("a@example.com", 99, "bounce"), sinktest.ErrNotFound)
	require.ErrorContains(t, b.srv.SetStatus("a@example.com", 1, "gone"), "unknown status")
	require.NoError(t, b.srv.SetStatus("A@example.com", 0, "active"))
	a, _ := b.srv.SubscriberByEmail("a@example.com")
	require.Equal(t, sinktest.Membership{Status: "active", StatusMobile: "active", Updated: b.clock.Now()}, a.Lists[1])
}
