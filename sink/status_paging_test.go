package sink_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
)

// TestStatusFeedHeaderHints: a feed that says it pages only in its headers (an RFC 8288 Link,
// or the X-Total-Count, X-Next-Page, X-Pagination-… headers of common frameworks), with a
// bare array for a body and pages of 25 (not a round number), is read to its end.
func TestStatusFeedHeaderHints(t *testing.T) {
	t.Parallel()
	base := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	const total, per = 60, 25
	last := (total + per - 1) / per
	pageOf := func(r *http.Request) int {
		p, _ := strconv.Atoi(r.URL.Query().Get("page"))
		return max(p, 1)
	}
	pageURL := func(r *http.Request, p int, relative bool) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		if relative {
			return "?" + q.Encode()
		}
		return "http://" + r.Host + r.URL.Path + "?" + q.Encode()
	}
	for _, tc := range []struct {
		name   string
		header func(h http.Header, r *http.Request, p int)
	}{
		{"Link next and last", func(h http.Header, r *http.Request, p int) {
			links := []string{`<` + pageURL(r, 1, false) + `>; rel="first"`}
			if p < last {
				links = append(links, `<`+pageURL(r, p+1, false)+`>; rel="next"`)
			}
			h.Set("Link", strings.Join(append(links, `<`+pageURL(r, last, false)+`>; rel="last"`), ", "))
		}},
		{"Link relative, two headers, rel list", func(h http.Header, r *http.Request, p int) {
			h.Add("Link", `<`+pageURL(r, last, true)+`>; title="the end, really"; rel="last"`)
			if p < last {
				h.Add("Link", `<`+pageURL(r, p+1, true)+`>; rel="next nofollow"`)
			}
		}},
		{"X-Total-Count", func(h http.Header, r *http.Request, p int) { h.Set("X-Total-Count", strconv.Itoa(total)) }},
		{"X-Next-Page (GitLab)", func(h http.Header, r *http.Request, p int) {
			next := ""
			if p < last {
				next = strconv.Itoa(p + 1)
			}
			h.Set("X-Next-Page", next)
			h.Set("X-Page", strconv.Itoa(p))
			h.Set("X-Per-Page", strconv.Itoa(per))
		}},
		{"X-Pagination (Yii)", func(h http.Header, r *http.Request, p int) {
			h.Set("X-Pagination-Current-Page", strconv.Itoa(p))
			h.Set("X-Pagination-Page-Count", strconv.Itoa(last))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				p := pageOf(r)
				tc.header(w.Header(), r, p)
				writeJSON(w, 200, feedEntries(base, (p-1)*per, min(p*per, total)))
			})
			f, err := wr.client(t).ReadStatusFeed(t.Context(), base.Add(-time.Hour), base.Add(24*time.Hour))
			require.NoError(t, err)
			require.Len(t, f.Changes, total)
			require.Equal(t, "p59@example.com", f.Changes[total-1].Email)
			require.Equal(t, last, f.Requests)
			require.Empty(t, f.Gaps)
		})
	}
}

// TestStatusFeedLinkPagedEmulator: the emulator's Link-paged feed (WithStatusLinkPaged) is
// read to its end.
func TestStatusFeedLinkPagedEmulator(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, sinktest.WithStatusLinkPaged(25))
	ctx := t.Context()
	l, err := b.client.CreateList(ctx, "Nyheter")
	require.NoError(t, err)
	rows := make([]sink.Subscriber, 60)
	for i := range rows {
		rows[i] = sink.Subscriber{Email: fmt.Sprintf("p%d@example.com", i)}
	}
	_, err = b.client.BulkInsert(ctx, sink.BulkOptions{ListID: l.ID, Status: sink.StatusUnsubscribed}, rows)
	require.NoError(t, err)
	f, err := b.client.ReadStatusFeed(ctx, b.clock.now().Add(-time.Hour), b.clock.now())
	require.NoError(t, err)
	require.Len(t, f.Changes, 60)
	require.Equal(t, 3, f.Requests)
}

// TestStatusFeedProbesAFullAnswer: an answer as long as a page would be, with no hint at all,
// is not taken as the whole: page 2 is asked for. A service that pages by "page" without
// saying so is read to its end; one whose page 2 is empty was complete.
func TestStatusFeedProbesAFullAnswer(t *testing.T) {
	t.Parallel()
	base := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name         string
		total        int
		wantRequests int
	}{
		{"silent pages", 250, 4}, // 100, 100, 50 (short: the last)
		{"silent pages ending on a full page", 200, 3},
		{"exactly a round number", 100, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				p, _ := strconv.Atoi(r.URL.Query().Get("page"))
				p = max(p, 1)
				writeJSON(w, 200, feedEntries(base, min((p-1)*100, tc.total), min(p*100, tc.total)))
			})
			f, err := wr.client(t).ReadStatusFeed(t.Context(), base.Add(-time.Hour), base.Add(24*time.Hour))
			require.NoError(t, err)
			require.Len(t, f.Changes, tc.total)
			require.Empty(t, f.Gaps)
			if tc.total == 250 {
				require.Equal(t, tc.wantRequests-1, f.Requests, "a short page is the last")
				return
			}
			require.Equal(t, tc.wantRequests, f.Requests, "pages until an empty one")
		})
	}
}

// TestStatusFeedUnreadablePaging: an answer that pages in a way subsync cannot follow fails
// the read with the evidence, rather than being taken as the whole.
func TestStatusFeedUnreadablePaging(t *testing.T) {
	t.Parallel()
	base := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		serve   func(w http.ResponseWriter, r *http.Request)
		wantErr string
	}{
		{"cursor header", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Next-Cursor", "eyJpZCI6MjV9")
			writeJSON(w, 200, feedEntries(base, 0, 25))
		}, "the paging header X-Next-Cursor"},
		{"cursor member", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"data":`+feedEntries(base, 0, 25)+`,"next_cursor":"eyJpZCI6MjV9"}`)
		}, `pages with "next_cursor"`},
		{"has_more without a next page", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"data":`+feedEntries(base, 0, 25)+`,"has_more":true}`)
		}, "has_more"},
		{"a next page that answers page 1 again", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"data":`+feedEntries(base, 0, 25)+`,"total":60,"per_page":25}`)
		}, "page 2 answered only entries of the pages before it"},
		{"a Link that is not one", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "page=2")
			writeJSON(w, 200, feedEntries(base, 0, 25))
		}, "a Link header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request, _ int) { tc.serve(w, r) })
			f, err := wr.client(t).ReadStatusFeed(t.Context(), base.Add(-time.Hour), base.Add(24*time.Hour))
			require.ErrorIs(t, err, sink.ErrStatusFeedShape)
			require.ErrorContains(t, err, tc.wantErr)
			require.Empty(t, f.Changes)
		})
	}
}

// TestStatusFeedBounded (#35 point 7): a feed whose every answer names a new next page, one
// whose pages are huge, and one that answers slowly, each end the read with
// ErrStatusFeedLimit at the read's bound of requests, bytes or time, instead of reading on.
func TestStatusFeedBounded(t *testing.T) {
	t.Parallel()
	base := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	t.Run("endless distinct next pages", func(t *testing.T) {
		t.Parallel()
		wr := newWire(t, func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Link", `<?page=`+strconv.Itoa(n+1)+`&token=`+strconv.Itoa(n*7919)+`>; rel="next"`)
			writeJSON(w, 200, feedEntries(base, n, n+1))
		})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		f, err := wr.client(t).ReadStatusFeed(ctx, base.Add(-time.Hour), base.Add(24*time.Hour))
		require.ErrorIs(t, err, sink.ErrStatusFeedLimit)
		require.NotErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "5000 requests made, the most one read may make (status.max_pages)")
		require.Equal(t, sink.StatusMaxPagesDefault, f.Requests)
		require.Len(t, wr.recorded(), sink.StatusMaxPagesDefault)
		require.True(t, sink.IsPermanent(err), "reading again would do the same")
	})
	t.Run("huge pages", func(t *testing.T) {
		t.Parallel()
		// 7 MiB pages of new entries, each naming a next one.
		const per = 75_000
		page := func(n int) string {
			return `{"data":` + feedEntries(base, (n-1)*per, n*per) + `,"next":"?page=` + strconv.Itoa(n+1) + `"}`
		}
		require.Greater(t, len(page(1)), 7<<20)
		require.Less(t, len(page(1)), sink.MaxResponseBytes)
		wr := newWire(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, page(n)) })
		f, err := wr.client(t, func(c *sink.Config) { c.StatusMaxBytes = 32 << 20 }).
			ReadStatusFeed(t.Context(), base.Add(-time.Hour), base.Add(24*time.Hour))
		require.ErrorIs(t, err, sink.ErrStatusFeedLimit)
		require.ErrorContains(t, err, "over the 32 MiB one read may take (status.max_bytes)")
		require.Equal(t, 5, f.Requests, "the fifth 7 MB answer passes 32 MiB")
	})
	t.Run("slow", func(t *testing.T) {
		t.Parallel()
		wr := newWire(t, func(w http.ResponseWriter, r *http.Request, n int) {
			time.Sleep(50 * time.Millisecond) // the service's pace, not synchronisation
			w.Header().Set("Link", `<?page=`+strconv.Itoa(n+1)+`>; rel="next"`)
			writeJSON(w, 200, feedEntries(base, n, n+1))
		})
		f, err := wr.client(t, func(c *sink.Config) { c.StatusMaxTime = 500 * time.Millisecond }).
			ReadStatusFeed(t.Context(), base.Add(-time.Hour), base.Add(24*time.Hour))
		require.ErrorIs(t, err, sink.ErrStatusFeedLimit)
		require.ErrorContains(t, err, "longer than 500ms (status.max_time)")
		require.True(t, sink.IsPermanent(err))
		require.Less(t, f.Requests, 20)
	})
}
