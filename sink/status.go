package sink

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/subsync/subsync/internal/secret"
)

// StatusChange is one entry of the service's status feed: a subscriber whose status (or
// SMS status) in a list changed at DateUpdated.
type StatusChange struct {
	SubscriberID int64
	Email        string
	Phone        string
	Status       string // active, unsubscribed or bounce (lower case); "" when only StatusMobile is given
	StatusMobile string
	ListID       int64
	DateUpdated  time.Time // UTC
}

// StatusFeed is what one read of the status feed found.
type StatusFeed struct {
	// Changes are the changes in the window, oldest first, exact repeats dropped.
	Changes []StatusChange
	// Requests is how many requests the read took (pages and narrowed windows).
	Requests int
	// Warnings say what the read could not rule out: an answer as long as a page would be,
	// without a paging hint, for a window that could not be narrowed further.
	Warnings []string
}

// ErrStatusFeedShape is wrapped by the error of a status answer subsync cannot read: an
// unknown top-level shape, or an entry without a recognisable e-mail (or subscriber id),
// status or time. Such an answer is never taken in part.
var ErrStatusFeedShape = errors.New("status feed answer not understood")

// StatusEntryShape is the entry form subsync reads from the status feed, as its errors show it.
const StatusEntryShape = `{"email" (or "id"/"subscriber_id"), "status" (or "email_status"; or only "status_mobile"/"phone_status"/"sms_status"), ` +
	`"date_updated" (or "updated_at"), optional "subscriber_list_id"/"list_id", "phone"}`

// statusShape is the top-level form subsync reads, as its errors show it.
const statusShape = `a JSON array of entries, or an object holding them under one of ` +
	`"data", "items", "results", "changes", "subscribers", "statuses" or "entries" ` +
	`(with optional paging: "next", "next_page", "page"/"total", "links", "meta")`

// statusKeys are the members an object answer may hold its entries under.
var statusKeys = []string{"data", "items", "results", "changes", "subscribers", "statuses", "entries"}

// statusEntry is the wire form, with the alternative member names seen in the wild.
type statusEntry struct {
	ID               flexInt    `json:"id"`
	SubscriberID     flexInt    `json:"subscriber_id"`
	Email            flexString `json:"email"`
	Phone            flexString `json:"phone"`
	Mobile           flexString `json:"mobile"`
	Status           flexString `json:"status"`
	EmailStatus      flexString `json:"email_status"`
	StatusMobile     flexString `json:"status_mobile"`
	PhoneStatus      flexString `json:"phone_status"` // the public PHP client's name
	SMSStatus        flexString `json:"sms_status"`
	SubscriberListID flexInt    `json:"subscriber_list_id"`
	ListID           flexInt    `json:"list_id"`
	DateUpdated      flexString `json:"date_updated"`
	UpdatedAt        flexString `json:"updated_at"`
}

// pageSuspect reports whether an answer of n entries without any paging hint is as long as a
// page would be: a round number (a multiple of 50), which a real window rarely is by chance
// and a server's page size nearly always is.
func pageSuspect(n int) bool { return n >= 50 && n%50 == 0 }

// maxStatusPages bounds the pages followed for one window, against a hint that never ends.
const maxStatusPages = 100_000

// StatusChanges is [Client.ReadStatusFeed] without its warnings and request count.
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
// Paging hints are followed to the end: "next"/"next_page" (a URL on the service's host, or
// a page number), "links.next", "meta" or top-level "page"/"current_page" with
// "last_page"/"total_pages"/"pages" or "total"/"per_page". An answer without a hint that is
// as long as a page would be is narrowed: the window is split at a day boundary and each
// half read on its own, until the answers are shorter or the window is one day, which is
// then reported in Warnings.
//
// Exact repeats — the same e-mail (case-insensitive), status, SMS status, list and time —
// are dropped, and the result is ordered oldest first.
func (c *Client) ReadStatusFeed(ctx context.Context, from, to time.Time) (StatusFeed, error) {
	var f StatusFeed
	var entries []StatusChange
	if err := c.readStatusWindow(ctx, from, to, &f, &entries); err != nil {
		return StatusFeed{Requests: f.Requests}, err
	}
	f.Changes = dedupeChanges(entries, from, to)
	return f, nil
}

// day is the UTC date of t at midnight.
func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func (c *Client) readStatusWindow(ctx context.Context, from, to time.Time, f *StatusFeed, out *[]StatusChange) error {
	query := url.Values{}
	if !from.IsZero() {
		query.Set("from_date", day(from).Format(time.DateOnly))
	}
	if !to.IsZero() {
		query.Set("to_date", day(to).AddDate(0, 0, 1).Format(time.DateOnly))
	}
	cl := &call{method: http.MethodGet, route: "/subscriberstatus", path: "/subscriberstatus", query: query}
	var got []StatusChange
	paged := false
	seenPages := map[string]bool{}
	for page := 1; ; page++ {
		if page > maxStatusPages {
			return fmt.Errorf("%s %s: more than %d pages: %w", cl.method, cl.path, maxStatusPages, ErrStatusFeedShape)
		}
		resp, err := c.do(ctx, cl)
		f.Requests++
		if err != nil {
			return err
		}
		p, err := c.parseStatusPage(resp.body)
		if err != nil {
			return fmt.Errorf("%s %s (page %d): %w", cl.method, cl.path, page, err)
		}
		got = append(got, p.changes...)
		paged = paged || p.hinted
		next, err := c.nextStatusCall(cl, p, len(got))
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
	// As long as a page would be, and no hint: narrow the window, if there is one to narrow.
	if !from.IsZero() && !to.IsZero() {
		first, last := day(from), day(to)
		if days := int(last.Sub(first).Hours()/24) + 1; days > 1 {
			mid := first.AddDate(0, 0, days/2)
			if err := c.readStatusWindow(ctx, from, mid.Add(-time.Millisecond), f, out); err != nil {
				return err
			}
			return c.readStatusWindow(ctx, mid, to, f, out)
		}
	}
	window := "the service's default window"
	if !from.IsZero() {
		window = day(from).Format(time.DateOnly)
	}
	f.Warnings = append(f.Warnings, fmt.Sprintf("the status feed answered %d changes for %s with no paging hint: "+
		"a page size, perhaps, and subsync cannot ask for a narrower window; reconciliation (status.reconcile_schedule) "+
		"catches what it may have missed", len(got), window))
	*out = append(*out, got...)
	return nil
}

// statusPage is one answer of the status feed.
type statusPage struct {
	changes []StatusChange
	hinted  bool   // the answer carries some paging hint
	nextURL string // a next page by URL
	next    int64  // a next page by number; 0 = none
	page    int64  // this page's number, when stated
	last    int64  // the last page's number, when stated or computed
	total   int64  // the total of entries, when stated; -1 = not stated
}

// parseStatusPage reads one answer: its entries and paging hints.
func (c *Client) parseStatusPage(body []byte) (statusPage, error) {
	p := statusPage{total: -1}
	trimmed := bytes.TrimLeft(body, " \t\r\n\ufeff")
	trimmed = bytes.TrimPrefix(trimmed, []byte("\xef\xbb\xbf"))
	var entries []json.RawMessage
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		if err := json.Unmarshal(trimmed, &entries); err != nil {
			return p, fmt.Errorf("%w: %v; want %s", ErrStatusFeedShape, err, statusShape)
		}
	case len(trimmed) > 0 && trimmed[0] == '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &obj); err != nil {
			return p, fmt.Errorf("%w: %v; want %s", ErrStatusFeedShape, err, statusShape)
		}
		found := ""
		for _, k := range statusKeys {
			if v, ok := obj[k]; ok && bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
				found = k
				break
			}
		}
		if found == "" {
			return p, fmt.Errorf("%w: an object with members %s; want %s", ErrStatusFeedShape, memberNames(obj), statusShape)
		}
		if err := json.Unmarshal(obj[found], &entries); err != nil {
			return p, fmt.Errorf("%w: %q: %v; want %s", ErrStatusFeedShape, found, err, statusShape)
		}
		if err := readPaging(obj, &p); err != nil {
			return p, err
		}
	case json.Valid(trimmed):
		return p, fmt.Errorf("%w: a JSON value %s; want %s", ErrStatusFeedShape, maskScalar(trimmed), statusShape)
	default:
		return p, fmt.Errorf("%w: a body of %d bytes that is not JSON; want %s", ErrStatusFeedShape, len(body), statusShape)
	}
	p.changes = make([]StatusChange, 0, len(entries))
	for i, raw := range entries {
		ch, err := parseStatusEntry(raw)
		if err != nil {
			return p, fmt.Errorf("%w: entry %d %s: %v; want %s", ErrStatusFeedShape, i+1, maskEntry(raw), err, StatusEntryShape)
		}
		p.changes = append(p.changes, ch)
	}
	return p, nil
}

// memberNames lists an object's member names, sorted: "{a, b}".
func memberNames(obj map[string]json.RawMessage) string {
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, strconv.Quote(k))
	}
	sort.Strings(names)
	return "{" + strings.Join(names, ", ") + "}"
}

// readPaging reads the paging hints of an object answer into p.
func readPaging(obj map[string]json.RawMessage, p *statusPage) error {
	var bad error
	hintNext := func(raw json.RawMessage) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			return
		}
		p.hinted = true
		switch s := rawText(raw); {
		case s == "" || s == "false" || s == "0":
		case raw[0] == '"' && !isDigits(s):
			p.nextURL = s
		default:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				bad = fmt.Errorf("%w: a paging hint %s that is neither a URL nor a page number", ErrStatusFeedShape, excerpt(string(raw), 60))
				return
			}
			p.next = n
		}
	}
	num := func(m map[string]json.RawMessage, keys ...string) (int64, bool) {
		for _, k := range keys {
			if v, ok := m[k]; ok {
				if n, err := strconv.ParseInt(strings.TrimSpace(rawText(v)), 10, 64); err == nil {
					return n, true
				}
			}
		}
		return 0, false
	}
	read := func(m map[string]json.RawMessage) {
		for _, k := range []string{"next", "next_page", "next_page_url"} {
			if v, ok := m[k]; ok {
				hintNext(v)
			}
		}
		if n, ok := num(m, "page", "current_page"); ok {
			p.page, p.hinted = n, true
		}
		if n, ok := num(m, "last_page", "total_pages", "pages"); ok {
			p.last, p.hinted = n, true
		}
		if n, ok := num(m, "total"); ok {
			p.total, p.hinted = n, true
		}
		if p.last == 0 && p.total >= 0 {
			if per, ok := num(m, "per_page", "limit", "page_size"); ok && per > 0 {
				p.last = (p.total + per - 1) / per
			}
		}
	}
	read(obj)
	for _, k := range []string{"links", "meta", "paging", "pagination"} {
		if v, ok := obj[k]; ok {
			var m map[string]json.RawMessage
			if json.Unmarshal(v, &m) == nil {
				p.hinted = true
				read(m)
			}
		}
	}
	return bad
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// nextStatusCall is the request of the page after p, or nil when p is the last. got is how
// many entries were read so far in this window.
func (c *Client) nextStatusCall(cl *call, p statusPage, got int) (*call, error) {
	if !p.hinted || len(p.changes) == 0 {
		return nil, nil
	}
	if p.nextURL != "" {
		return c.callForURL(cl, p.nextURL)
	}
	cur := p.page
	if cur == 0 {
		cur, _ = strconv.ParseInt(cl.query.Get("page"), 10, 64)
		cur = max(cur, 1)
	}
	next := p.next
	switch {
	case next > 0:
	case p.last > 0:
		if cur >= p.last {
			return nil, nil
		}
		next = cur + 1
	case p.total >= 0:
		if int64(got) >= p.total {
			return nil, nil
		}
		next = cur + 1
	default:
		return nil, nil // a "next": null, or a page number alone: this was the last page
	}
	if next <= cur {
		return nil, fmt.Errorf("%w: the next page %d is not after page %d", ErrStatusFeedShape, next, cur)
	}
	q := cloneValues(cl.query)
	q.Set("page", strconv.FormatInt(next, 10))
	return &call{method: cl.method, route: cl.route, path: cl.path, query: q}, nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v)+1)
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// callForURL turns a next-page URL into a call. The URL must be on the service's own
// scheme, host and base path: the credentials go nowhere else.
func (c *Client) callForURL(cl *call, raw string) (*call, error) {
	base, err := url.Parse(c.baseURL + "/")
	if err != nil {
		return nil, err
	}
	ref, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: a next-page URL that does not parse", ErrStatusFeedShape)
	}
	// A relative reference is resolved against the request it came with.
	u := base.ResolveReference(&url.URL{Path: strings.TrimPrefix(cl.path, "/")}).ResolveReference(ref)
	basePath := strings.TrimRight(base.Path, "/")
	if u.Scheme != base.Scheme || u.Host != base.Host || !strings.HasPrefix(u.Path, basePath+"/") {
		return nil, fmt.Errorf("%w: the next-page URL %s is not under the service's base URL %s; not followed",
			ErrStatusFeedShape, c.redact(secret.DSN("", u.String())), c.baseURL)
	}
	return &call{method: cl.method, route: cl.route, path: strings.TrimPrefix(u.Path, basePath), query: u.Query()}, nil
}

// parseStatusEntry reads one entry, strictly.
func parseStatusEntry(raw json.RawMessage) (StatusChange, error) {
	var e statusEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return StatusChange{}, err
	}
	ch := StatusChange{
		SubscriberID: int64(cmp.Or(e.ID, e.SubscriberID)),
		Email:        strings.TrimSpace(string(e.Email)),
		Phone:        strings.TrimSpace(string(cmp.Or(e.Phone, e.Mobile))),
		Status:       strings.ToLower(strings.TrimSpace(string(cmp.Or(e.Status, e.EmailStatus)))),
		StatusMobile: strings.ToLower(strings.TrimSpace(string(cmp.Or(e.StatusMobile, e.PhoneStatus, e.SMSStatus)))),
		ListID:       int64(cmp.Or(e.SubscriberListID, e.ListID)),
	}
	if ch.Email == "" && ch.SubscriberID == 0 {
		return ch, errors.New("no e-mail and no subscriber id")
	}
	if ch.Email != "" && !strings.Contains(ch.Email, "@") {
		return ch, errors.New("an e-mail without @")
	}
	if ch.Status == "" && ch.StatusMobile == "" {
		return ch, errors.New("no status")
	}
	for _, s := range []string{ch.Status, ch.StatusMobile} {
		switch s {
		case "", StatusActive, StatusUnsubscribed, StatusBounce:
		default:
			return ch, fmt.Errorf("unknown status %q (want active, unsubscribed or bounce)", excerpt(s, 30))
		}
	}
	when := strings.TrimSpace(string(cmp.Or(e.DateUpdated, e.UpdatedAt)))
	if when == "" {
		return ch, errors.New("no time (date_updated)")
	}
	t, err := parseTime(when)
	if err != nil {
		return ch, err
	}
	ch.DateUpdated = t
	return ch, nil
}

// maskEntry renders a feed entry for an error message with every value that may be personal
// data replaced: only ids, statuses, list ids and times are shown as they are.
func maskEntry(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return "(not an object: " + maskScalar(raw) + ")"
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(k))
		b.WriteString(": ")
		switch k {
		case "id", "subscriber_id", "status", "email_status", "status_mobile", "phone_status", "sms_status",
			"subscriber_list_id", "list_id", "date_updated", "updated_at":
			b.WriteString(excerpt(string(bytes.TrimSpace(obj[k])), 40))
		default:
			b.WriteString(maskScalar(obj[k]))
		}
	}
	b.WriteByte('}')
	return b.String()
}

// maskScalar replaces a value with its kind: "…@example.com" keeps an e-mail's domain
// (rarely personal), everything else becomes secret.Personal.
func maskScalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0, string(raw) == "null", string(raw) == "true", string(raw) == "false":
		return string(raw)
	case raw[0] == '"':
		s := rawText(raw)
		if s == "" {
			return `""`
		}
		if at := strings.LastIndexByte(s, '@'); at >= 0 {
			return strconv.Quote(secret.Personal + s[at:])
		}
		return strconv.Quote(secret.Personal)
	case raw[0] == '{', raw[0] == '[':
		return "(" + secret.Personal + ")"
	}
	return secret.Personal
}

// dedupeChanges drops exact repeats and what falls outside [from, to] (zero = open), and
// orders the rest oldest first.
func dedupeChanges(entries []StatusChange, from, to time.Time) []StatusChange {
	type key struct {
		email, status, statusMobile string
		id, list                    int64
		at                          time.Time
	}
	seen := make(map[key]bool, len(entries))
	out := make([]StatusChange, 0, len(entries))
	for _, ch := range entries {
		if (!from.IsZero() && ch.DateUpdated.Before(from)) || (!to.IsZero() && ch.DateUpdated.After(to)) {
			continue
		}
		k := key{strings.ToLower(ch.Email), ch.Status, ch.StatusMobile, ch.SubscriberID, ch.ListID, ch.DateUpdated}
		if ch.Email != "" {
			k.id = 0
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, ch)
	}
	slices.SortStableFunc(out, func(a, b StatusChange) int { return a.DateUpdated.Compare(b.DateUpdated) })
	return out
}
