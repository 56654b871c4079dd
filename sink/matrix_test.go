package sink_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
)

// TestSwitchMatrix runs the contract of every operation a switch touches against the
// emulator in each of its alternatives (sinktest.Switches): the client must be right against
// every one, told the form of the list parameter or left to detect it.
func TestSwitchMatrix(t *testing.T) {
	t.Parallel()
	for _, sw := range sinktest.Switches() {
		for _, detect := range []bool{false, true} {
			t.Run(fmt.Sprintf("switch=%s/detect=%t", sw.Name, detect), func(t *testing.T) {
				t.Parallel()
				switchContract(t, sw, detect)
			})
		}
	}
}

// switchContract is TestSwitchMatrix's contract against one switch.
func switchContract(t *testing.T, sw sinktest.Switch, detect bool) {
	b := setup(t, func(c *sink.Config) { c.ListIDArray = sw.ListIDArray && !detect; c.ListIDDetect = detect }, sw.Options...)
	ctx := t.Context()
	c := b.client

	// Updates (PATCH, or PUT where PATCH is refused).
	l, err := c.CreateList(ctx, "Nyheter")
	require.NoError(t, err)
	l, err = c.UpdateList(ctx, l.ID, "Nyhetsbrev")
	require.NoError(t, err)
	require.Equal(t, "Nyhetsbrev", l.Title)
	f, err := c.CreateCustomField(ctx, sink.CustomField{Label: "Kundenr", Datatype: sink.DatatypeString})
	require.NoError(t, err)
	f, err = c.UpdateCustomField(ctx, f.ID, "Kundenummer")
	require.NoError(t, err)
	require.Equal(t, "Kundenummer", f.Label)

	// Bulk insert, with and without a status, into the list (either form of its id).
	rows := make([]sink.Subscriber, 5)
	for i := range rows {
		rows[i] = sink.Subscriber{Email: fmt.Sprintf("p%d@example.com", i), Firstname: fmt.Sprint("P", i)}
		rows[i].SetField(f.Value, fmt.Sprint("K-", i))
	}
	res, err := c.BulkInsert(ctx, sink.BulkOptions{ListID: l.ID}, rows)
	require.NoError(t, err)
	require.Equal(t, 5, res.Sent)
	require.Len(t, b.srv.ListSubscribers(l.ID), 5)
	_, err = c.BulkInsert(ctx, sink.BulkOptions{ListID: l.ID, Status: sink.StatusBounce}, rows[4:])
	require.NoError(t, err)

	// A refused row is isolated whatever the 422 says.
	bad := []sink.Subscriber{{Email: "ok@example.com"}, {Email: "x@example.com", Birthday: "2023-02-30"}}
	res, err = c.InsertBatch(ctx, sink.BulkOptions{ListID: l.ID}, bad)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent)
	require.Len(t, res.Rejects, 1)
	require.Equal(t, 1, res.Rejects[0].Index)

	// Single create/update with a status.
	b.clock.advance(time.Minute)
	_, err = c.UpsertSubscriber(ctx, l.ID, sink.Subscriber{Email: "p0@example.com"}, sink.StatusUnsubscribed)
	require.NoError(t, err)
	stored, _ := b.srv.SubscriberByEmail("p0@example.com")
	require.Equal(t, sink.StatusUnsubscribed, stored.Lists[l.ID].Status)

	// Reads.
	got, found, err := c.SubscriberByEmail(ctx, "P1@example.com")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "P1", got.Firstname)
	page, err := c.SubscribersByList(ctx, sink.ByListQuery{ListID: l.ID, Status: sink.StatusUnsubscribed})
	require.NoError(t, err)
	var unsubscribed []string
	for _, r := range page {
		require.NotEmpty(t, r.Status, "each row carries its own status")
		if r.Status == sink.StatusUnsubscribed {
			unsubscribed = append(unsubscribed, r.Email)
		}
	}
	require.Equal(t, []string{"p0@example.com"}, unsubscribed)

	// The status feed, in whatever shape and granularity.
	b.clock.advance(time.Minute)
	require.NoError(t, b.srv.SetStatus("p2@example.com", l.ID, sink.StatusUnsubscribed))
	b.clock.advance(time.Minute)
	require.NoError(t, b.srv.SetStatus("p3@example.com", l.ID, sink.StatusBounce))
	feed, err := c.ReadStatusFeed(ctx, b.clock.now().Add(-24*time.Hour), b.clock.now())
	require.NoError(t, err)
	require.Empty(t, feed.Gaps)
	var emails []string
	for _, ch := range feed.Changes {
		emails = append(emails, ch.Email+" "+ch.Status)
	}
	require.Equal(t, []string{"p4@example.com bounce", "p0@example.com unsubscribed",
		"p2@example.com unsubscribed", "p3@example.com bounce"}, emails)

	// Refused credentials are a permanent 401 whatever the body.
	wrong := setupClientOf(t, b, "wrong-key")
	_, err = wrong.Lists(ctx)
	requireAPIError(t, err, http.StatusUnauthorized)
	require.True(t, sink.IsPermanent(err))
}

// setupClientOf is a client of b's emulator with another API key.
func setupClientOf(t *testing.T, b testBundle, key string) *sink.Client {
	t.Helper()
	c, err := sink.New(sink.Config{BaseURL: b.srv.URL, UserID: b.srv.User, APIKey: key, HTTPClient: b.srv.Client(),
		RequestsPerSecond: -1, MaxAttempts: 1, Version: "test"})
	require.NoError(t, err)
	return c
}
