package sinktest

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// listIDs reads subscriber_list_id and subscriber_list_id[] (each may repeat).
func listIDs(q url.Values, arrayOnly bool) ([]int64, *rowError) {
	var ids []int64
	keys := []string{"subscriber_list_id", "subscriber_list_id[]"}
	if arrayOnly {
		keys = keys[1:]
	}
	for _, key := range keys {
		for _, v := range q[key] {
			id, ok := parseID(v)
			if !ok {
				return nil, rowErrorf(0, "invalid subscriber_list_id %q", v)
			}
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return nil, rowErrorf(0, "subscriber_list_id is required")
	}
	return ids, nil
}

// bulkOptions reads the query of a bulkinsert.
func bulkOptions(q url.Values, activeRevives, omitRevives, arrayOnly bool) (applyOpts, *rowError) {
	var o applyOpts
	ids, rerr := listIDs(q, arrayOnly)
	if rerr != nil {
		return o, rerr
	}
	o.lists = ids
	for _, p := range []struct {
		name string
		dst  *uint8
	}{{"status", &o.status}, {"status_mobile", &o.mobile}} {
		if !q.Has(p.name) {
			continue
		}
		s, ok := parseStatus(q.Get(p.name), true)
		if !ok {
			return o, rowErrorf(0, "unknown %s %q", p.name, q.Get(p.name))
		}
		*p.dst = s
	}
	switch tag := q.Get("tag"); tag {
	case "", "replace":
	case "merge":
		o.mergeTags = true
	default:
		return o, rowErrorf(0, "unknown tag %q (want replace or merge)", tag)
	}
	o.revive = activeRevives || omitRevives
	o.omitted = omitRevives
	return o, nil
}

// bulkInsert serves both bulkinsert forms. Every row is validated before any is applied.
func (e *Emulator) bulkInsert(w http.ResponseWriter, r *http.Request, ri *reqInfo) {
	sc := getScratch()
	defer putScratch(sc)
	raw, err := readBodyInto(w, r, &sc.body)
	if err != nil {
		return
	}
	body := bodyString(raw) // the upserts point into it: apply copies what it keeps
	o, rerr := bulkOptions(r.URL.Query(), e.opts.activeRevives, e.opts.omitRevives, e.opts.listArrayOnly)
	e.mu.Lock()
	defs := e.st.fieldDefs()
	e.mu.Unlock()
	// Parse and validate without the lock, against the custom fields as they were.
	ups, n, derr := sc.parseBulk(body, defs)
	ri.rows = n
	if rerr == nil {
		rerr = derr
	}
	if rerr != nil {
		write422(w, "%s", rerr)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.st.fieldsVer != defs.ver { // custom fields changed meanwhile: validate again
		if ups, _, rerr = sc.parseBulk(body, e.st.fieldDefs()); rerr != nil {
			write422(w, "%s", rerr)
			return
		}
	}
	for _, id := range o.lists {
		if e.st.lists[id] == nil {
			write422(w, "%s", rowErrorf(0, "unknown list %d", id))
			return
		}
	}
	now := ms(e.now())
	e.st.prefetch(ups)
	for i := range ups {
		e.st.apply(&ups[i], o, now)
	}
	writeOK(w)
}

// createSubscriber is the single create/update: an upsert by e-mail into the list(s) of the
// query. A status in the body (or, without one, in the query; only the query's with
// WithStatusFromQuery) is applied as given (active revives); without one a new membership is
// active and an existing one keeps its status (becomes active with WithOmissionRevives).
func (e *Emulator) createSubscriber(w http.ResponseWriter, r *http.Request, _ *reqInfo) {
	sc := getScratch()
	defer putScratch(sc)
	body, err := readBodyInto(w, r, &sc.body)
	if err != nil {
		return
	}
	ids, rerr := listIDs(r.URL.Query(), e.opts.listArrayOnly)
	if rerr != nil {
		write422(w, "%s", rerr.reason)
		return
	}
	m, ok := scanObject(bodyString(body)) // apply copies what it keeps
	if !ok {
		write422(w, "body must be a JSON object")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range ids {
		if e.st.lists[id] == nil {
			write422(w, "unknown list %d", id)
			return
		}
	}
	u, status, reason := e.st.fieldDefs().parseRow(m, true, nil)
	if reason != "" {
		write422(w, "%s", reason)
		return
	}
	q := r.URL.Query()
	var mobile uint8
	if e.opts.statusQuery {
		status = stNone
	}
	for _, p := range []struct {
		key string
		to  *uint8
	}{{"status", &status}, {"status_mobile", &mobile}} {
		if !q.Has(p.key) || *p.to != stNone {
			continue
		}
		st, ok := parseStatus(q.Get(p.key), false)
		if !ok {
			write422(w, "unknown %s %q", p.key, q.Get(p.key))
			return
		}
		*p.to = st
	}
	s := e.st.apply(&u, applyOpts{lists: ids, status: status, mobile: mobile, revive: true, omitted: e.opts.omitRevives}, ms(e.now()))
	writeJSON(w, http.StatusOK, ack{Status: "200 Success", ID: s.id})
}

func (e *Emulator) getSubscriber(w http.ResponseWriter, _ *http.Request, _ *reqInfo, id int64) {
	e.mu.Lock()
	s := e.st.subscriber(id)
	var out []byte
	if s != nil {
		out = e.st.showV2(nil, s, e.st.sortedFields())
	}
	e.mu.Unlock()
	if s == nil {
		notFound(w, nil, nil)
		return
	}
	writeRaw(w, http.StatusOK, out)
}

// deleteSubscriber serves the v2 and the v3 delete alike.
func (e *Emulator) deleteSubscriber(w http.ResponseWriter, _ *http.Request, _ *reqInfo, id int64) {
	e.mu.Lock()
	ok := e.st.deleteSubscriber(id)
	e.mu.Unlock()
	if !ok {
		notFound(w, nil, nil)
		return
	}
	writeOK(w)
}

// unsubscribe sets the e-mail status of every membership of the subscriber to unsubscribed.
func (e *Emulator) unsubscribe(w http.ResponseWriter, _ *http.Request, _ *reqInfo, id int64) {
	e.mu.Lock()
	s := e.st.subscriber(id)
	if s != nil {
		e.st.setStatus(s, 0, stUnsubscribed, ms(e.now()))
	}
	e.mu.Unlock()
	if s == nil {
		notFound(w, nil, nil)
		return
	}
	writeOK(w)
}

// showV2 appends the v2 show representation of s to dst.
func (st *store) showV2(dst []byte, s *subscriber, fields []*customField) []byte {
	var buf [32]fieldKV
	kvs := decodeFields(buf[:0], st.fieldsOf(s))
	get := func(idx int) string {
		for _, kv := range kvs {
			if kv.idx == idx {
				return kv.val
			}
		}
		return ""
	}
	o := newObj(dst)
	o.int("id", s.id)
	o.str("email", st.email(s))
	for _, idx := range []int{fFirstname, fLastname, fAddress, fZip, fCity} {
		o.str(stdFieldNames[idx], get(idx))
	}
	o.strOrNull("phone", get(fPhone))
	o.str("company", get(fCompany))
	o.strOrNull("birthday", get(fBirthday))
	o.str("gender", get(fGender))
	o.str("date_created", formatMS(s.created))
	o.str("date_updated", formatMS(s.updated))
	for idx := fConsentEmail; idx <= fConsentPrivacy; idx++ {
		o.strOrNull(stdFieldNames[idx], get(idx))
	}
	o.strOrNull("external_id", get(fExternalID))
	for _, f := range fields {
		o.strOrNull(fieldName(fieldExtraBase+f.slot), get(fieldExtraBase+f.slot))
	}
	return o.done()
}

// byList serves GET /subscribers/by_list: one page of a list's subscribers, by id, each with
// its statuses in the list (email_status, phone_status), of the status asked for (every
// status with WithByListIgnoresStatus).
func (e *Emulator) byList(w http.ResponseWriter, r *http.Request, _ *reqInfo) {
	q := r.URL.Query()
	listID, ok := parseID(q.Get("list_id"))
	if !ok {
		write422(w, "list_id is required")
		return
	}
	page, perPage := 1, 100
	for _, p := range []struct {
		name     string
		dst      *int
		min, max int
	}{{"page", &page, 1, 1 << 30}, {"per_page", &perPage, 1, MaxBulkRows}} {
		if !q.Has(p.name) {
			continue
		}
		n, err := strconv.Atoi(q.Get(p.name))
		if err != nil || n < p.min || n > p.max {
			write422(w, "%s must be an integer from %d to %d", p.name, p.min, p.max)
			return
		}
		*p.dst = n
	}
	status := stNone
	if q.Has("status") {
		s, ok := parseStatus(q.Get("status"), false)
		if !ok {
			write422(w, "unknown status %q", q.Get("status"))
			return
		}
		status = s
	}
	var after int64 = -1 << 62
	if q.Has("updated_after") {
		t, ok := parseTime(q.Get("updated_after"), false)
		if !ok {
			write422(w, "updated_after must be an ISO 8601 time or YYYY-MM-DD")
			return
		}
		after = ms(t)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.st.lists[listID] == nil {
		notFound(w, nil, nil)
		return
	}
	fields := e.st.sortedFields()
	out := []byte{'['}
	skip, n := (page-1)*perPage, 0
	for s := range e.st.live() {
		m := e.st.membership(s, listID)
		if m == nil || (status != stNone && m.status != status && !e.opts.byListAll) || max(s.updated, m.updated) <= after {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = e.st.showV2(out, s, fields)
		// The row's own statuses in the list, under the names the public PHP client reads.
		o := obj{b: out[:len(out)-1]} // reopens the row: its next key follows a comma
		o.str("email_status", statusName(m.status))
		o.str("phone_status", statusName(m.mobile))
		out = o.done()
		if n++; n == perPage {
			break
		}
	}
	writeRaw(w, http.StatusOK, append(out, ']'))
}

// byEmail serves POST /subscribers/by_email: {"email": …} answers the one subscriber with
// this e-mail (trimmed, case-insensitive), or 404 when there is none, as public clients use it.
func (e *Emulator) byEmail(w http.ResponseWriter, r *http.Request, ri *reqInfo) {
	body, err := readBody(w, r)
	if err != nil {
		return
	}
	var b struct {
		Email *string `json:"email"`
	}
	if err := decodeObject(w, body, &b); err != nil {
		return
	}
	if b.Email == nil || strings.TrimSpace(*b.Email) == "" {
		write422(w, "email is required")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.st.byEmailKey(emailKey(*b.Email))
	if s == nil {
		notFound(w, r, ri)
		return
	}
	writeRaw(w, http.StatusOK, e.st.showV2(nil, s, e.st.sortedFields()))
}

// parseTime reads an ISO 8601 time (UTC when no zone is given) or a date YYYY-MM-DD. A date
// means its first millisecond, or with endOfDay its last.
func parseTime(s string, endOfDay bool) (time.Time, bool) {
	if t, err := time.Parse(dateLayout, s); err == nil {
		if endOfDay {
			t = t.Add(24*time.Hour - time.Millisecond)
		}
		return t, true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
