package sink_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

// TestStatusFeedStrict: an answer subsync cannot read fails the read as a whole, naming the
// shape it expected and the offending entry with its personal data masked.
func TestStatusFeedStrict(t *testing.T) {
	t.Parallel()
	good := `{"id": 1, "email": "good@example.com", "status": "unsubscribed", "subscriber_list_id": 3, "date_updated": "2024-03-01T10:00:00Z"}`
	for _, tc := range []struct {
		name, body, wantErr string
	}{
		{"no status", `[` + good + `, {"id": 2, "email": "kari.nordmann@example.com", "firstname": "Kari", "phone": "+4791234567", "date_updated": "2024-03-01T10:00:00Z"}]`,
			`entry 2 {"date_updated": "2024-03-01T10:00:00Z", "email": "***@example.com", "firstname": "***", "id": 2, "phone": "***"}: no status`},
		{"no e-mail or id", `[{"status": "bounce", "date_updated": "2024-03-01T10:00:00Z"}]`, "entry 1"},
		{"no time", `[{"email": "kari@example.com", "status": "bounce"}]`, "no time (date_updated)"},
		{"unreadable time", `[{"email": "kari@example.com", "status": "bounce", "date_updated": "yesterday"}]`, "unrecognised timestamp"},
		{"unknown status", `[{"email": "kari@example.com", "status": "gone", "date_updated": "2024-03-01"}]`, `unknown status "gone"`},
		{"renamed members", `[{"mail": "kari@example.com", "state": "unsubscribed", "changed": "2024-03-01"}]`, `"mail": "***@example.com"`},
		{"unknown wrapper", `{"subscriber_changes": [` + good + `]}`, `an object with members {"subscriber_changes"}`},
		{"a string", `"kari@example.com unsubscribed"`, "want a JSON array of entries"},
		{"entries not objects", `[["kari@example.com", "unsubscribed"]]`, "entry 1 (not an object: (***))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) { writeJSON(w, 200, tc.body) })
			got, err := wr.client(t).StatusChanges(t.Context(), time.Time{}, time.Time{})
			require.ErrorIs(t, err, sink.ErrStatusFeedShape)
			require.ErrorContains(t, err, tc.wantErr)
			require.Nil(t, got, "nothing of an answer that is not understood")
			for _, personal := range []string{"kari", "Kari", "4791234567", "good@"} {
				require.NotContains(t, err.Error(), personal)
			}
			if strings.HasPrefix(tc.body, "[{") {
				require.ErrorContains(t, err, sink.StatusEntryShape)
			}
		})
	}
}

// TestStatusFeedPhoneStatus: the public PHP client's phone_status is the SMS status; an entry
// with only an SMS status is a change.
func TestStatusFeedPhoneStatus(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		writeJSON(w, 200, `[{"subscriber_id": 7, "email": "a@example.com", "phone_status": "Unsubscribed", "date_updated": "2024-03-01 10:00:00"}]`)
	})
	got, err := wr.client(t).StatusChanges(t.Context(), time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, []sink.StatusChange{{SubscriberID: 7, Email: "a@example.com", StatusMobile: "unsubscribed",
		DateUpdated: time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)}}, got)
}

// feedEntries is n entries a@…, one a minute from base.
func feedEntries(base time.Time, lo, hi int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := lo; i < hi; i++ {
		if i > lo {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"email":"p%d@example.com","status":"unsubscribed","date_updated":%q}`,
			i+1, i, base.Add(time.Duration(i)*time.Minute).Format(time.RFC3339))
	}
	b.WriteByte(']')
	return b.String()
}

// TestStatusFeedPagingHints: every paging hint the evidence allows is followed to the end.
func TestStatusFeedPagingHints(t *testing.T) {
	t.Parallel()
	base := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	const total, per = 250, 100
	pageOf := func(r *http.Request) int {
		p, _ := strconv.Atoi(r.URL.Query().Get("page"))
		return max(p, 1)
	}
	slice := func(p int) string { return feedEntries(base, (p-1)*per, min(p*per, total)) }
	last := (total + per - 1) / per
	for _, tc := range []struct {
		name string
		page func(r *http.Request, p int) string
	}{
		{"links.next URL", func(r *http.Request, p int) string {
			next := "null"
			if p < last {
				next = strconv.Quote("http://" + r.Host + r.URL.Path + "?page=" + strconv.Itoa(p+1) + "&" + r.URL.Query().Encode())
			}
			return `{"data":` + slice(p) + `,"links":{"next":` + next + `}}`
		}},
		{"relative next", func(r *http.Request, p int) string {
			next := `""`
			if p < last {
				q := r.URL.Query()
				q.Set("page", strconv.Itoa(p+1))
				next = strconv.Quote("?" + q.Encode())
			}
			return `{"items":` + slice(p) + `,"next":` + next + `}`
		}},
		{"next_page number", func(r *http.Request, p int) string {
			next := "null"
			if p < last {
				next = strconv.Itoa(p + 1)
			}
			return `{"changes":` + slice(p) + `,"next_page":` + next + `}`
		}},
		{"meta last_page", func(r *http.Request, p int) string {
			return fmt.Sprintf(`{"data":%s,"meta":{"current_page":%d,"last_page":%d}}`, slice(p), p, last)
		}},
		{"page and total", func(r *http.Request, p int) string {
			return fmt.Sprintf(`{"results":%s,"page":%d,"per_page":%d,"total":%d}`, slice(p), p, per, total)
		}},
		{"total only", func(r *http.Request, p int) string {
			return fmt.Sprintf(`{"subscribers":%s,"total":"%d"}`, slice(p), total)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) { writeJSON(w, 200, tc.page(r, pageOf(r))) })
			f, err := wr.client(t).ReadStatusFeed(t.Context(), base.Add(-time.Hour), base.Add(24*time.Hour))
			require.NoError(t, err)
			require.Len(t, f.Changes, total)
			require.Equal(t, "p249@example.com", f.Changes[total-1].Email)
			require.Equal(t, last, f.Requests)
			require.Empty(t, f.Gaps)
			for _, r := range wr.recorded() {
				q, _ := url.ParseQuery(r.query)
				require.Equal(t, "2024-03-01", q.Get("from_date"), "the window stays the same on every page")
				require.Equal(t, "2024-03-03", q.Get("to_date"))
			}
		})
	}
}

// TestStatusFeedNextOffHost: a next-page URL on another host is not followed (the credentials
// would go with it): the read fails.
func TestStatusFeedNextOffHost(t *testing.T) {
	t.Parallel()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		writeJSON(w, 200, `{"data":`+feedEntries(time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), 0, 2)+`,"next":"https://elsewhere.example/feed?page=2"}`)
	})
	_, err := wr.client(t).StatusChanges(t.Context(), time.Time{}, time.Time{})
	require.ErrorIs(t, err, sink.ErrStatusFeedShape)
	require.ErrorContains(t, err, "https://elsewhere.example/feed?page=2 is not under the service's base URL")
	require.Len(t, wr.recorded(), 1)
}

// TestStatusFeedNarrowsAFullAnswer: an answer as long as a page would be, with no paging hint,
// and a page 2 that answers the same, makes the read narrow its window by days until the
// answers are shorter; a one-day window still full is a gap.
func TestStatusFeedNarrowsAFullAnswer(t *testing.T) {
	t.Parallel()
	for _, perDay := range []int{30, 60} {
		t.Run(fmt.Sprintf("%d a day", perDay), func(t *testing.T) {
			t.Parallel()
			// A service that answers at most 100 entries, the oldest, with no hint, and
			// reads its dates as whole days; perDay changes a day on 1–4 March.
			var all []time.Time
			for d := range 4 {
				for i := range perDay {
					all = append(all, time.Date(2024, 3, 1+d, 1, i, 0, 0, time.UTC))
				}
			}
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				q := r.URL.Query()
				from, _ := time.Parse(time.DateOnly, q.Get("from_date"))
				to, _ := time.Parse(time.DateOnly, q.Get("to_date"))
				var b strings.Builder
				b.WriteByte('[')
				n := 0
				for i, at := range all {
					if at.Before(from) || !at.Before(to.Add(24*time.Hour)) || n == 100 {
						continue
					}
					if n > 0 {
						b.WriteByte(',')
					}
					n++
					fmt.Fprintf(&b, `{"email":"p%d@example.com","status":"bounce","date_updated":%q}`, i, at.Format(time.RFC3339))
				}
				b.WriteByte(']')
				writeJSON(w, 200, b.String())
			})
			f, err := wr.client(t).ReadStatusFeed(t.Context(), time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
				time.Date(2024, 3, 4, 23, 0, 0, 0, time.UTC))
			require.NoError(t, err)
			require.Greater(t, f.Requests, 1, "the window was narrowed")
			t.Logf("%d requests, %d changes, gaps: %+v", f.Requests, len(f.Changes), f.Gaps)
			if perDay == 30 {
				require.Len(t, f.Changes, 4*perDay, "every change, read a day at a time")
				require.Empty(t, f.Gaps)
				return
			}
			// A one-day window still asks for two days (to_date is the day after): 100
			// come back, so those days are reported.
			require.NotEmpty(t, f.Gaps)
			require.Contains(t, f.Gaps[0].Reason, "answered 100 changes for 2024-03-0")
			require.Contains(t, f.Gaps[0].Reason, "no paging hint")
			require.Contains(t, f.Gaps[0].Reason, "asking for page 2 answered the same")
			require.Equal(t, 100, f.Gaps[0].Entries)
		})
	}
}
