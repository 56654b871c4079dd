package sinktest

import (
	"net/http"
	"slices"
	"time"
)

// defaultStatusWindow is how far back /subscriberstatus looks without from_date.
const defaultStatusWindow = 30 * 24 * time.Hour

// statusFeed serves GET /subscriberstatus: the recorded status changes whose date_updated lies
// in [from_date, to_date], oldest first. Without from_date the window starts 30 days ago.
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
	lo, hi := ms(from), int64(1<<62)
	if !to.IsZero() {
		hi = ms(to)
	}
	e.mu.Lock()
	var sel []change
	for _, c := range e.st.changes {
		if c.at >= lo && c.at <= hi {
			sel = append(sel, c)
		}
	}
	e.mu.Unlock()
	slices.SortStableFunc(sel, func(a, b change) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	out := make([]byte, 0, 64+len(sel)*160)
	if e.opts.statusWrapped {
		out = append(out, `{"changes":`...)
	}
	out = append(out, '[')
	for i, c := range sel {
		if i > 0 {
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
	if e.opts.statusWrapped {
		out = append(out, '}')
	}
	writeRaw(w, http.StatusOK, out)
}
