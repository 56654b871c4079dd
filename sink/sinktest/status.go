package sinktest

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// defaultStatusWindow is how far back /subscriberstatus looks without from_date.
const defaultStatusWindow = 30 * 24 * time.Hour

// AddStatusEntry makes every answer of /subscriberstatus (its first page) start with raw, a
// JSON value written as given: an entry a client may not be able to read.
func (e *Emulator) AddStatusEntry(raw string) {
	e.smu.Lock()
	defer e.smu.Unlock()
	e.rawStatuses = append(e.rawStatuses, raw)
}

// statusFeed serves GET /subscriberstatus: the recorded status changes whose date_updated lies
// in [from_date, to_date], oldest first. Without from_date the window starts 30 days ago.
// WithStatusDays reads both bounds as whole days; WithStatusWrapped and WithStatusPaged
// change the answer's shape; WithStatusLinkPaged pages it through a Link header only.
func (e *Emulator) statusFeed(w http.ResponseWriter, r *http.Request, _ *reqInfo) {
	q := r.URL.Query()
	now := e.now()
	from, to := now.Add(-defaultStatusWindow), time.Time{}
	if q.Has("from_date") {
		t, ok := parseTime(q.Get("from_date"), false)
		if !ok {
			write422(w, "from_date must be an ISO 8601 time or YYYY-MM-DD")
			return
		}
		from = t
	}
	if q.Has("to_date") {
		t, ok := parseTime(q.Get("to_date"), true)
		if !ok {
			write422(w, "to_date must be an ISO 8601 time or YYYY-MM-DD")
			return
		}
		to = t
	}
	if e.opts.statusDays {
		from = from.Truncate(24 * time.Hour)
		if !to.IsZero() {
			to = to.Truncate(24 * time.Hour).Add(24*time.Hour - time.Millisecond)
		}
	}
	lo, hi := ms(from), int64(1<<62)
	if !to.IsZero() {
		hi = ms(to)
	}
	e.mu.Lock()
	var sel []shownChange
	for _, c := range e.st.changes {
		if c.at >= lo && c.at <= hi {
			sel = append(sel, e.st.shown(c))
		}
	}
	e.mu.Unlock()
	slices.SortStableFunc(sel, func(a, b shownChange) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	if c := e.opts.statusCap; c > 0 && len(sel) > c {
		sel = sel[:c]
	}
	total := len(sel)
	page, last := 1, 1
	per := e.opts.statusPaged
	if e.opts.statusLink > 0 {
		per = e.opts.statusLink
	}
	if per > 0 {
		if p, err := strconv.Atoi(q.Get("page")); err == nil && p > 0 {
			page = p
		} else if q.Has("page") {
			write422(w, "page must be a positive integer")
			return
		}
		last = max(1, (total+per-1)/per)
		lo := min((page-1)*per, total)
		sel = sel[lo:min(lo+per, total)]
	}
	out := make([]byte, 0, 160+len(sel)*160)
	switch {
	case e.opts.statusPaged > 0 && e.opts.statusLink == 0:
		out = append(out, `{"data":`...)
	case e.opts.statusWrapped:
		out = appendString(append(out, '{'), cmp.Or(e.opts.statusWrapKey, "changes"))
		out = append(out, ':')
	}
	out = append(out, '[')
	n := 0
	if page == 1 {
		e.smu.Lock()
		for _, raw := range e.rawStatuses {
			if n++; n > 1 {
				out = append(out, ',')
			}
			out = append(out, raw...)
		}
		e.smu.Unlock()
	}
	for _, c := range sel {
		if n++; n > 1 {
			out = append(out, ',')
		}
		o := newObj(out)
		o.int("id", c.subscriber)
		o.str("email", c.email)
		o.strOrNull("phone", c.phone)
		o.str("status", statusName(c.status))
		o.str("status_mobile", statusName(c.mobile))
		o.int("subscriber_list_id", c.list)
		o.str("date_updated", formatMS(c.at))
		out = o.done()
	}
	out = append(out, ']')
	if e.opts.statusLink > 0 {
		link := `<` + pageURL(r, q, last) + `>; rel="last"`
		if page < last {
			link = `<` + pageURL(r, q, page+1) + `>; rel="next", ` + link
		}
		w.Header().Set("Link", link)
	}
	switch {
	case e.opts.statusPaged > 0 && e.opts.statusLink == 0:
		m := newObj(append(out, `,"meta":`...))
		m.int("current_page", int64(page))
		m.int("last_page", int64(last))
		m.int("per_page", int64(e.opts.statusPaged))
		m.int("total", int64(total))
		out = m.done()
		l := newObj(append(out, `,"links":`...))
		if page < last {
			l.str("next", pageURL(r, q, page+1))
		} else {
			l.null("next")
		}
		out = append(l.done(), '}')
	case e.opts.statusWrapped:
		out = append(out, '}')
	}
	writeRaw(w, http.StatusOK, out)
}

// shownChange is a change with its strings, as the feed shows it (email and phone stand
// over the change's references into the arena).
type shownChange struct {
	change
	email, phone string
}

// shown returns c with its strings.
func (st *store) shown(c change) shownChange {
	return shownChange{change: c, email: st.arena.str(c.email), phone: lookupField(st.arena.str(c.fields), fPhone)}
}

// pageURL is the absolute URL of page n of the request r (whose query is q).
func pageURL(r *http.Request, q url.Values, n int) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	nq := url.Values{}
	for k, v := range q {
		nq[k] = v
	}
	nq.Set("page", strconv.Itoa(n))
	return (&url.URL{Scheme: scheme, Host: r.Host, Path: r.URL.Path, RawQuery: nq.Encode()}).String()
}
