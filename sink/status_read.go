package sink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// StatusFeed is what one read of the status feed found.
type StatusFeed struct {
	// Changes are the changes in the window, oldest first, exact repeats dropped.
	Changes []StatusChange
	// Requests is how many requests the read took (pages, probes and narrowed windows).
	Requests int
	// Bytes is the size of every answer read.
	Bytes int64
	// Gaps are the parts of the window the read could not read to their end (see
	// StatusGap); what the feed did answer for them is in Changes.
	Gaps []StatusGap
}

// StatusGap is a part of the window the feed may not have answered in full, as far as
// subsync can tell: an answer as long as a page would be (a multiple of 50) with no paging
// hint, where asking for its page 2 answered the same entries again (or was refused), and
// a window that cannot be narrowed (one day, or the service's default window).
type StatusGap struct {
	// From and To bound the window (From zero: the service's default window).
	From, To time.Time
	// Entries is how many entries the answer held.
	Entries int
	// Reason says what was seen, for a run's message.
	Reason string
}

// ErrStatusFeedLimit is wrapped by the error of a read of the status feed that reached one
// of its bounds (Config.StatusMaxPages, StatusMaxBytes, StatusMaxTime): a service that
// pages without end, or answers far more than a feed of changes holds, fails the read
// instead of holding the worker and its memory. Reading again would do the same.
var ErrStatusFeedLimit = errors.New("status feed read over its bounds")

// pageSuspect reports whether an answer of n entries without any paging hint is as long as a
// page would be: a round number (a multiple of 50), which a real window rarely is by chance
// and a server's page size nearly always is.
func pageSuspect(n int) bool { return n >= 50 && n%50 == 0 }

// StatusChanges is [Client.ReadStatusFeed] without its gaps and counts.
func (c *Client) StatusChanges(ctx context.Context, from, to time.Time) ([]StatusChange, error) {
	f, err := c.ReadStatusFeed(ctx, from, to)
	return f.Changes, err
}

// ReadStatusFeed reads the status feed (GET /subscriberstatus) for the changes in [from, to]
// (a zero bound is open: the service's default window).
//
// The bounds are sent as UTC dates: from_date the day of from, to_date the day after to's,
// so the window is covered whether the service reads them as times (midnight) or as whole
// days; what falls outside [from, to] is dropped here. A service that reads a date in a zone
// ahead of UTC may leave out the last hours before to: a caller that moves a cursor keeps an
// overlap of at least a day (the status pull does), which reads them the next time.
//
// The answer is read strictly: a bare array, or an object holding the entries under a known
// member (statusShape). An entry without an e-mail or subscriber id, a status and a
// readable time, or an answer of another shape, fails the read with ErrStatusFeedShape,
// the shape expected and the entry with its personal data masked; nothing is returned then.
// "status" or "email_status", "status_mobile", "phone_status" or "sms_status",
// "date_updated" or "updated_at"; times with or without fraction and zone (none = UTC).
//
// Paging hints are followed to the end, in the body — "next"/"next_page" (a URL on the
// service's host, or a page number), "links.next", "meta" or top-level
// "page"/"current_page" with "last_page"/"total_pages"/"pages" or "total"/"per_page" — and in
// the headers: an RFC 8288 Link with rel="next", and X-Next-Page, X-Total-Count/X-Total,
// X-Total-Pages, X-Page, X-Per-Page and their X-Pagination-… forms (readHeaderPaging). A
// hint subsync cannot follow (a cursor or a continuation token, has_more without a next
// page, a next page that answers again what was read) fails the read with
// ErrStatusFeedShape and the evidence.
//
// An answer without a hint that is as long as a page would be (pageSuspect) is not taken as
// the whole: its page 2 is asked for. Entries not seen before show a service that pages by
// "page" without saying so, and the pages are read until one brings nothing new; an empty
// answer shows the first was complete; the same entries again (or a refusal) show a service
// that ignores "page", and the window is split at a day boundary and each half read on its
// own, until the answers are shorter or the window is one day, which is then a gap
// (StatusFeed.Gaps).
//
// The read is bounded (Config.StatusMaxPages requests, StatusMaxBytes of answers,
// StatusMaxTime): past a bound it fails with ErrStatusFeedLimit.
//
// Exact repeats — the same e-mail (case-insensitive), status, SMS status, list and time —
// are dropped, and the result is ordered oldest first.
func (c *Client) ReadStatusFeed(ctx context.Context, from, to time.Time) (StatusFeed, error) {
	r := &feedRead{c: c, deadline: time.Now().Add(c.cfg.StatusMaxTime)}
	rctx, cancel := context.WithDeadline(ctx, r.deadline)
	defer cancel()
	var entries []StatusChange
	err := r.window(rctx, from, to, false, &entries)
	if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w: the read took longer than %s (status.max_time) after %d requests: %w",
			ErrStatusFeedLimit, c.cfg.StatusMaxTime, r.f.Requests, err)
	}
	if err != nil {
		return StatusFeed{Requests: r.f.Requests, Bytes: r.f.Bytes}, err
	}
	r.f.Changes = dedupeChanges(entries, from, to)
	return r.f, nil
}

// feedRead is one ReadStatusFeed: what it read so far, against its bounds.
type feedRead struct {
	c        *Client
	f        StatusFeed
	deadline time.Time
}

// day is the UTC date of t at midnight.
func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// get makes one request of the read, within its bounds, and parses the answer.
func (r *feedRead) get(ctx context.Context, cl *call) (statusPage, error) {
	c := r.c
	if r.f.Requests >= c.cfg.StatusMaxPages {
		return statusPage{}, fmt.Errorf("%w: %d requests made, the most one read may make (status.max_pages); "+
			"the service may be paging without end", ErrStatusFeedLimit, r.f.Requests)
	}
	resp, err := c.do(ctx, cl)
	r.f.Requests++
	r.f.Bytes += int64(len(resp.body))
	if err != nil {
		return statusPage{}, err
	}
	if r.f.Bytes > c.cfg.StatusMaxBytes {
		return statusPage{}, fmt.Errorf("%w: %d MiB of answers in %d requests, over the %d MiB one read may take (status.max_bytes)",
			ErrStatusFeedLimit, r.f.Bytes>>20, r.f.Requests, c.cfg.StatusMaxBytes>>20)
	}
	p, err := c.parseStatusPage(resp.body, resp.header)
	if err != nil {
		return p, fmt.Errorf("%s %s?%s: %w", cl.method, cl.path, cl.query.Encode(), err)
	}
	return p, nil
}

// window reads the changes of [from, to] into out: every page, then, for an answer that
// may be one page of several, its page 2, then narrower windows (see ReadStatusFeed).
// pageIgnored: the service was seen to ignore "page".
func (r *feedRead) window(ctx context.Context, from, to time.Time, pageIgnored bool, out *[]StatusChange) error {
	query := url.Values{}
	if !from.IsZero() {
		query.Set("from_date", day(from).Format(time.DateOnly))
	}
	if !to.IsZero() {
		query.Set("to_date", day(to).AddDate(0, 0, 1).Format(time.DateOnly))
	}
	first := &call{method: http.MethodGet, route: "/subscriberstatus", path: "/subscriberstatus", query: query}
	cl := first
	var got []StatusChange
	seen := map[changeKey]bool{}
	paged := false
	seenPages := map[string]bool{}
	for page := 1; ; page++ {
		p, err := r.get(ctx, cl)
		if err != nil {
			return err
		}
		if page > 1 && len(p.changes) > 0 && !addNew(seen, p.changes, nil) {
			return fmt.Errorf("%s %s?%s: %w: page %d answered only entries of the pages before it: "+
				"the service pages in a way subsync cannot follow", cl.method, cl.path, cl.query.Encode(), ErrStatusFeedShape, page)
		}
		if page == 1 {
			addNew(seen, p.changes, nil)
		}
		got = append(got, p.changes...)
		paged = paged || p.hinted
		next, err := r.c.nextStatusCall(cl, p, len(got))
		if err != nil {
			return fmt.Errorf("%s %s (page %d): %w", cl.method, cl.path, page, err)
		}
		if next == nil {
			break
		}
		key := next.path + "?" + next.query.Encode()
		if seenPages[key] {
			return fmt.Errorf("%s %s: the paging hint of page %d points back to a page already read: %w",
				cl.method, cl.path, page, ErrStatusFeedShape)
		}
		seenPages[key] = true
		cl = next
	}
	if paged || !pageSuspect(len(got)) {
		*out = append(*out, got...)
		return nil
	}
	if !pageIgnored {
		more, ignored, err := r.probe(ctx, first, got, seen)
		if err != nil {
			return err
		}
		if !ignored {
			*out = append(append(*out, got...), more...)
			return nil
		}
		pageIgnored = true
	}
	// As long as a page would be, no hint, and "page" means nothing to the service: narrow
	// the window, if there is one to narrow.
	if !from.IsZero() && !to.IsZero() {
		first, last := day(from), day(to)
		if days := int(last.Sub(first).Hours()/24) + 1; days > 1 {
			mid := first.AddDate(0, 0, days/2)
			if err := r.window(ctx, from, mid.Add(-time.Millisecond), pageIgnored, out); err != nil {
				return err
			}
			return r.window(ctx, mid, to, pageIgnored, out)
		}
	}
	window := "the service's default window"
	if !from.IsZero() {
		window = day(from).Format(time.DateOnly)
	}
	r.f.Gaps = append(r.f.Gaps, StatusGap{From: from, To: to, Entries: len(got), Reason: fmt.Sprintf(
		"the status feed answered %d changes for %s with no paging hint, asking for page 2 answered the same "+
			"(the service ignores \"page\"), and the window cannot be narrowed further: a page or a cap, perhaps, "+
			"and subsync cannot read past it", len(got), window)})
	*out = append(*out, got...)
	return nil
}

// probe asks for page 2, 3, … of the window first asked, whose page 1 answered got (seen
// holds their keys), and returns the entries they add. ignored: page 2 answered the same
// entries again, or was refused: the service does not page by "page".
func (r *feedRead) probe(ctx context.Context, first *call, got []StatusChange, seen map[changeKey]bool) (more []StatusChange, ignored bool, err error) {
	for n := 2; ; n++ {
		q := cloneValues(first.query)
		q.Set("page", strconv.Itoa(n))
		p, err := r.get(ctx, &call{method: first.method, route: first.route, path: first.path, query: q})
		var apiErr *APIError
		if n == 2 && errors.As(err, &apiErr) && !apiErr.Temporary() && apiErr.StatusCode != http.StatusUnauthorized &&
			apiErr.StatusCode != http.StatusForbidden {
			return nil, true, nil // "page" refused: not a parameter of this service
		}
		if err != nil {
			return nil, false, err
		}
		if len(p.changes) == 0 {
			return more, false, nil
		}
		if !addNew(seen, p.changes, &more) {
			if n == 2 {
				return nil, true, nil
			}
			return more, false, nil
		}
		if p.hinted || len(p.changes) < len(got) {
			// A hint on a later page only (or a short page): this was the last one asked for;
			// a hint pointing further is not followed from here.
			if p.hinted && (p.nextURL != "" || p.next > 0) {
				return nil, false, fmt.Errorf("%w: page %d of an answer without paging hints carries one; "+
					"subsync cannot tell where the pages end", ErrStatusFeedShape, n)
			}
			return more, false, nil
		}
	}
}

// changeKey identifies an entry of the feed, as dedupeChanges does.
type changeKey struct {
	email, status, statusMobile string
	id, list                    int64
	at                          time.Time
}

func keyOf(ch StatusChange) changeKey {
	k := changeKey{strings.ToLower(ch.Email), ch.Status, ch.StatusMobile, ch.SubscriberID, ch.ListID, ch.DateUpdated}
	if ch.Email != "" {
		k.id = 0
	}
	return k
}

// addNew adds the keys of changes to seen and the changes not seen before to *more (unless
// more is nil); it reports whether any was new.
func addNew(seen map[changeKey]bool, changes []StatusChange, more *[]StatusChange) bool {
	added := false
	for _, ch := range changes {
		k := keyOf(ch)
		if seen[k] {
			continue
		}
		seen[k] = true
		added = true
		if more != nil {
			*more = append(*more, ch)
		}
	}
	return added
}
