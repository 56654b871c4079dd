package sinktest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func listsOf(st *store, s *subscriber) []int64 {
	var out []int64
	for m := range st.memberships(s) {
		out = append(out, m.list)
	}
	return out
}

// TestMembershipsInlineAndMore: the first membership is held inline and the others aside;
// leaving any of them keeps the others in order, and the side map holds only what it must.
func TestMembershipsInlineAndMore(t *testing.T) {
	t.Parallel()
	st := newStore()
	for range 4 {
		st.createList("L", 1)
	}
	u := upsert{email: "Ann@example.com", key: "ann@example.com", fields: []fieldKV{{fPhone, "+4712345678"}}}
	s := st.apply(&u, applyOpts{lists: []int64{1, 2, 3}}, 1)
	require.Equal(t, []int64{1, 2, 3}, listsOf(st, s))
	require.True(t, s.hasMore)
	require.Equal(t, 1, st.lists[2].emails)
	require.Equal(t, 1, st.lists[3].sms)

	require.True(t, st.deleteList(1))
	require.Equal(t, []int64{2, 3}, listsOf(st, s))
	st.apply(&u, applyOpts{lists: []int64{4}}, 2)
	require.Equal(t, []int64{2, 3, 4}, listsOf(st, s))
	require.True(t, st.deleteList(3))
	require.Equal(t, []int64{2, 4}, listsOf(st, s))

	// A status change in every list is recorded in the order of the memberships.
	require.True(t, st.setStatus(s, 0, stUnsubscribed, 3))
	require.Len(t, st.changes, 2)
	for i, list := range []int64{2, 4} {
		c := st.shown(st.changes[i])
		require.Equal(t, list, c.list)
		require.Equal(t, "Ann@example.com", c.email)
		require.Equal(t, "+4712345678", c.phone)
	}
	require.Zero(t, st.lists[2].emails)
	require.Equal(t, 1, st.lists[2].sms)

	require.True(t, st.deleteList(2))
	require.Equal(t, []int64{4}, listsOf(st, s))
	require.False(t, s.hasMore)
	require.Empty(t, st.more)
	require.True(t, st.deleteList(4))
	require.Empty(t, listsOf(st, s))
}

// TestDeletedSubscriberLeavesNothing: a deleted subscriber's id answers nothing, its key is
// free for a new subscriber with a new id, and the side maps forget it.
func TestDeletedSubscriberLeavesNothing(t *testing.T) {
	t.Parallel()
	st := newStore()
	st.createList("A", 1)
	st.createList("B", 1)
	u := upsert{email: "Bo@Example.com", key: "bo@example.com", tags: []string{"x"}, hasTags: true}
	s := st.apply(&u, applyOpts{lists: []int64{1, 2}}, 1)
	id := s.id
	require.Equal(t, s, st.byEmailKey("bo@example.com"))
	require.Equal(t, "Bo@Example.com", st.email(s))
	require.True(t, st.deleteSubscriber(id))
	require.False(t, st.deleteSubscriber(id))
	require.Nil(t, st.subscriber(id))
	require.Nil(t, st.byEmailKey("bo@example.com"))
	require.Empty(t, st.tags)
	require.Empty(t, st.more)
	require.Zero(t, st.lists[1].emails)
	require.Zero(t, st.byKey.len())

	again := st.apply(&u, applyOpts{lists: []int64{2}}, 2)
	require.Equal(t, id+1, again.id)
	require.Equal(t, []int64{2}, listsOf(st, again))
	require.Equal(t, []string{"x"}, st.tagsOf(again))
}

// TestSubTableChunks: ids run on across chunks and a subscriber never moves.
func TestSubTableChunks(t *testing.T) {
	t.Parallel()
	var tab subTable
	first := tab.add()
	for range subsChunk + 10 {
		tab.add()
	}
	require.Equal(t, int64(subsChunk+11), tab.len())
	require.Same(t, first, tab.at(1))
	require.Equal(t, int64(subsChunk+1), tab.at(subsChunk+1).id)
	require.Len(t, tab.chunks, 2)
}
