package sink

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/subsync/subsync/internal/secret"
)

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
	unreadable := func(m map[string]json.RawMessage) {
		for k, v := range m {
			lower := strings.ToLower(k)
			if slices.ContainsFunc(unreadableHints, func(w string) bool { return strings.Contains(lower, w) }) {
				if s := rawText(v); s != "" && s != "null" && s != "false" {
					bad = cmp.Or(bad, fmt.Errorf("%w: the answer pages with %q, a cursor subsync cannot follow", ErrStatusFeedShape, k))
				}
			}
			if (lower == "has_more" || lower == "hasmore" || lower == "more") && rawText(v) == "true" {
				p.hinted, p.hasMore = true, true
			}
		}
	}
	read(obj)
	unreadable(obj)
	for _, k := range []string{"links", "meta", "paging", "pagination"} {
		if v, ok := obj[k]; ok {
			var m map[string]json.RawMessage
			if json.Unmarshal(v, &m) == nil {
				p.hinted = true
				read(m)
				unreadable(m)
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
	if p.hasMore && p.next == 0 && p.last == 0 && p.total < 0 {
		return nil, fmt.Errorf("%w: the answer says more entries follow (has_more) but not where", ErrStatusFeedShape)
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

// Paging headers subsync reads (canonical names), by what they say.
var (
	headerNext  = []string{"X-Next-Page", "X-Pagination-Next-Page"}
	headerTotal = []string{"X-Total-Count", "X-Total", "X-Pagination-Total-Count"}
	headerLast  = []string{"X-Total-Pages", "X-Last-Page", "X-Pagination-Page-Count", "X-Pagination-Total-Pages"}
	headerPage  = []string{"X-Page", "X-Current-Page", "X-Pagination-Current-Page"}
	headerPer   = []string{"X-Per-Page", "X-Page-Size", "X-Pagination-Per-Page", "X-Pagination-Limit"}
)

// unreadableHints are words in a header or member name that say the answer pages in a way
// subsync cannot follow (a cursor or a continuation token rather than a page or a URL).
var unreadableHints = []string{"cursor", "continuation", "next-token", "next_token", "nexttoken", "page-token",
	"page_token", "pagetoken", "scroll"}

// readHeaderPaging reads the paging hints of an answer's headers into p: an RFC 8288 Link
// header with rel="next" (its URL, relative or absolute), the next page's number, the total
// of entries or of pages, this page's number and the page size. A header naming a cursor or
// a continuation token is a hint subsync cannot follow: an error with ErrStatusFeedShape.
func readHeaderPaging(h http.Header, p *statusPage) error {
	for name := range h {
		lower := strings.ToLower(name)
		for _, w := range unreadableHints {
			if strings.Contains(lower, w) {
				return fmt.Errorf("%w: the answer carries the paging header %s, a cursor subsync cannot follow", ErrStatusFeedShape, name)
			}
		}
	}
	if links := h.Values("Link"); len(links) > 0 {
		p.hinted = true
		next, err := linkNext(links)
		if err != nil {
			return err
		}
		if next != "" {
			p.nextURL = next
		}
	}
	num := func(names []string) (int64, bool) {
		for _, n := range names {
			if v := strings.TrimSpace(h.Get(n)); v != "" {
				if x, err := strconv.ParseInt(v, 10, 64); err == nil {
					return x, true
				}
			}
		}
		return 0, false
	}
	for _, n := range headerNext {
		if _, ok := h[n]; !ok {
			continue
		}
		p.hinted = true
		switch v := strings.TrimSpace(h.Get(n)); {
		case v == "" || v == "0" || v == "null":
		case isDigits(v):
			p.next, _ = strconv.ParseInt(v, 10, 64)
		default:
			p.nextURL = v
		}
	}
	if x, ok := num(headerTotal); ok {
		p.total, p.hinted = x, true
	}
	if x, ok := num(headerLast); ok {
		p.last, p.hinted = x, true
	}
	if x, ok := num(headerPage); ok {
		p.page, p.hinted = x, true
	}
	if per, ok := num(headerPer); ok && per > 0 && p.last == 0 && p.total >= 0 {
		p.last = (p.total + per - 1) / per
	}
	return nil
}

// linkNext returns the target of the link with relation type "next" among the values of Link
// headers (RFC 8288: `<URI>; rel="next", <URI>; rel="last"`), or "" when there is none.
func linkNext(values []string) (string, error) {
	for _, v := range values {
		for rest := strings.TrimSpace(v); rest != ""; {
			if rest[0] != '<' {
				return "", fmt.Errorf("%w: a Link header %s that is not <URI>; rel=…", ErrStatusFeedShape, excerpt(v, 80))
			}
			end := strings.IndexByte(rest, '>')
			if end < 0 {
				return "", fmt.Errorf("%w: a Link header %s without its closing >", ErrStatusFeedShape, excerpt(v, 80))
			}
			target := rest[1:end]
			rest = rest[end+1:]
			// The parameters run to the next link (a comma outside quotes) or the end.
			params, quoted := len(rest), false
			for i := 0; i < len(rest); i++ {
				if rest[i] == '"' {
					quoted = !quoted
				} else if rest[i] == ',' && !quoted {
					params = i
					break
				}
			}
			isNext := false
			for param := range strings.SplitSeq(rest[:params], ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(param), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
					continue
				}
				for rel := range strings.FieldsSeq(strings.Trim(strings.TrimSpace(val), `"`)) {
					isNext = isNext || strings.EqualFold(rel, "next")
				}
			}
			if isNext {
				return target, nil
			}
			rest = strings.TrimLeft(rest[min(params+1, len(rest)):], " \t,")
		}
	}
	return "", nil
}
