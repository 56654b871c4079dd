package sinktest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestListCRUDWithPUTAndTrailingSlash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := decode[listOut](t, b.ok("POST", "/subscriberlists/", `{"title":"Newsletter"}`))
	require.Equal(t, listOut{
		ID: 1, Title: "Newsletter", DateCreated: "2025-03-10T12:00:00.000Z", DateUpdated: "2025-03-10T12:00:00.000Z",
	}, created)

	b.clock.Set(time.Date(2025, 3, 11, 8, 30, 15, 123e6, time.UTC))
	patched := decode[listOut](t, b.ok("PATCH", "/subscriberlists/1", `{"title":"Weekly"}`))
	require.Equal(t, "Weekly", patched.Title)
	require.Equal(t, "2025-03-10T12:00:00.000Z", patched.DateCreated)
	require.Equal(t, "2025-03-11T08:30:15.123Z", patched.DateUpdated)
	put := decode[listOut](t, b.ok("PUT", "/subscriberlists/1/", `{"title":"Monthly"}`))
	require.Equal(t, "Monthly", put.Title)

	all := decode[[]listOut](t, b.ok("GET", "/subscriberlists", ""))
	require.Equal(t, []listOut{put}, all)
	require.Equal(t, all, decode[[]listOut](t, b.ok("GET", "/subscriberlists/", "")))

	r := b.v2("POST", "/subscriberlists", `{"title":"  "}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	r = b.v2("PUT", "/subscriberlists", `{"title":"x"}`)
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
	require.Equal(t, "GET, POST", r.header.Get("Allow"))

	require.JSONEq(t, `{"status":"200 Success"}`, b.ok("DELETE", "/subscriberlists/1/", "").body)
	require.Equal(t, http.StatusNotFound, b.v2("GET", "/subscriberlists/1", "").status)
}

func TestListCountsStayTrue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l1, l2 := b.createList("One"), b.createList("Two")
	q1 := "subscriber_list_id=" + itoa(l1.ID)
	b.ok("POST", "/subscribers/bulkinsert?"+q1, `[{"email":"a@example.com","phone":"+4711111111"},{"email":"b@example.com"},`+
		`{"email":"c@example.com","phone":"+4722222222"},{"email":"A@EXAMPLE.COM"}]`)
	got := b.list(l1.ID)
	require.Equal(t, [2]int{3, 2}, [2]int{got.SubscriberEmails, got.SubscriberSMS}, "e-mail is matched case-insensitively")

	// The same people into list two, and d into both through the repeated form.
	b.ok("POST", "/subscribers/bulkinsert?subscriber_list_id[]="+itoa(l2.ID), `[{"email":"a@example.com"},{"email":"b@example.com","phone":"+4733333333"}]`)
	b.ok("POST", "/subscribers/bulkinsert?subscriber_list_id[]="+itoa(l1.ID)+"&subscriber_list_id[]="+itoa(l2.ID), `[{"email":"d@example.com"}]`)
	got1, got2 := b.list(l1.ID), b.list(l2.ID)
	require.Equal(t, [2]int{4, 3}, [2]int{got1.SubscriberEmails, got1.SubscriberSMS}, "b's new phone counts in list one too")
	require.Equal(t, [2]int{3, 2}, [2]int{got2.SubscriberEmails, got2.SubscriberSMS})

	// Unsubscribe a: out of the e-mail count of both lists; status_mobile stays active.
	a, _ := b.srv.SubscriberByEmail("a@example.com")
	b.ok("POST", "/subscribers/"+itoa(a.ID)+"/unsubscribe", "")
	got1, got2 = b.list(l1.ID), b.list(l2.ID)
	require.Equal(t, [2]int{3, 3}, [2]int{got1.SubscriberEmails, got1.SubscriberSMS})
	require.Equal(t, [2]int{2, 2}, [2]int{got2.SubscriberEmails, got2.SubscriberSMS})

	// status_mobile=unsubscribed takes c out of the SMS count.
	b.ok("POST", "/subscribers/bulkinsert?"+q1+"&status_mobile=unsubscribed", `[{"email":"c@example.com"}]`)
	got1 = b.list(l1.ID)
	require.Equal(t, [2]int{3, 2}, [2]int{got1.SubscriberEmails, got1.SubscriberSMS})

	// Deleting a subscriber (v2) and one through v3 lowers the counts.
	bb, _ := b.srv.SubscriberByEmail("b@example.com")
	b.ok("DELETE", "/subscribers/"+itoa(bb.ID), "")
	d, _ := b.srv.SubscriberByEmail("d@example.com")
	require.Equal(t, http.StatusOK, b.v3("DELETE", "/subscribers/"+itoa(d.ID)).status)
	got1, got2 = b.list(l1.ID), b.list(l2.ID)
	require.Equal(t, [2]int{1, 1}, [2]int{got1.SubscriberEmails, got1.SubscriberSMS})
	require.Equal(t, [2]int{0, 1}, [2]int{got2.SubscriberEmails, got2.SubscriberSMS})
	require.Equal(t, http.StatusNotFound, b.v2("GET", "/subscribers/"+itoa(bb.ID), "").status)

	// Deleting a list (v3 here) removes its memberships, not the subscribers.
	require.Equal(t, http.StatusOK, b.v3("DELETE", "/subscriberlists/"+itoa(l1.ID)).status)
	require.Empty(t, b.srv.ListSubscribers(l1.ID))
	c, ok := b.srv.SubscriberByEmail("c@example.com")
	require.True(t, ok)
	require.Empty(t, c.Lists)
	require.Len(t, b.srv.ListSubscribers(l2.ID), 1)
	b.ok("DELETE", "/subscriberlists/"+itoa(l2.ID), "")
	require.Empty(t, b.srv.ListSubscribers(l2.ID))
	require.Len(t, b.srv.Subscribers(), 2)
}
