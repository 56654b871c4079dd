package sinktest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListMemberCount: the count is len(ListSubscribers): members whatever their status,
// e-mails matched case-insensitively, none of another list, and none once deleted or once
// their list is deleted.
func TestListMemberCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l1, l2 := b.createList("One"), b.createList("Two")
	b.ok("POST", "/subscribers/bulkinsert?subscriber_list_id="+itoa(l1.ID),
		`[{"email":"a@example.com"},{"email":"b@example.com"},{"email":"A@EXAMPLE.COM"},{"email":"c@example.com"}]`)
	b.ok("POST", "/subscribers/bulkinsert?subscriber_list_id="+itoa(l2.ID), `[{"email":"b@example.com"}]`)
	a, _ := b.srv.SubscriberByEmail("a@example.com")
	b.ok("POST", "/subscribers/"+itoa(a.ID)+"/unsubscribe", "")
	for _, l := range []int64{l1.ID, l2.ID} {
		require.Equal(t, len(b.srv.ListSubscribers(l)), b.srv.ListMemberCount(l))
	}
	require.Equal(t, 3, b.srv.ListMemberCount(l1.ID), "an unsubscribed member is still a member")
	require.Equal(t, 1, b.srv.ListMemberCount(l2.ID))

	c, _ := b.srv.SubscriberByEmail("c@example.com")
	b.ok("DELETE", "/subscribers/"+itoa(c.ID), "")
	require.Equal(t, 2, b.srv.ListMemberCount(l1.ID))
	require.Equal(t, http.StatusOK, b.v3("DELETE", "/subscriberlists/"+itoa(l2.ID)).status)
	require.Zero(t, b.srv.ListMemberCount(l2.ID))
	require.Equal(t, 2, b.srv.ListMemberCount(l1.ID))
}
