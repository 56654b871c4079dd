package sinktest

import (
	"net/http"
	"strconv"
	"time"
)

// Slots shown by the legacy representation.
const (
	legacyExtras     = 15
	legacyExtraDates = 5
)

// legacySubscriber serves the v3 show: the same subscriber under the legacy names.
func (e *Emulator) legacySubscriber(w http.ResponseWriter, _ *http.Request, _ *reqInfo, id int64) {
	e.mu.Lock()
	s := e.st.subscriber(id)
	var out []byte
	if s != nil {
		out = e.st.showV3(s)
	}
	e.mu.Unlock()
	if s == nil {
		notFound(w, nil, nil)
		return
	}
	writeRaw(w, http.StatusOK, out)
}

// showV3 renders s in the legacy shape: company→firm, phone→mobile (phone is ""), age "",
// EXTRA<n>→extra<n> (n ≤ 15), the k-th date custom field ever created→extra_date<k> (k ≤ 5,
// as an ISO 8601 time at midnight UTC). Every extra is present, "" when unset.
func (st *store) showV3(s *subscriber) []byte {
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
	var extra [legacyExtras + 1]string
	var extraDate [legacyExtraDates + 1]string
	for _, f := range st.slots {
		v := get(fieldExtraBase + f.slot)
		switch {
		case v == "":
		case f.datatype == "date" && f.dateOrd <= legacyExtraDates:
			if t, err := time.Parse(dateLayout, v); err == nil {
				extraDate[f.dateOrd] = t.Format(TimeFormat)
			}
		case f.datatype != "date" && f.slot <= legacyExtras:
			extra[f.slot] = v
		}
	}
	o := newObj(nil)
	o.int("id", s.id)
	o.str("email", st.email(s))
	o.str("firstname", get(fFirstname))
	o.str("lastname", get(fLastname))
	o.str("address", get(fAddress))
	o.str("zip", get(fZip))
	o.str("city", get(fCity))
	o.str("phone", "")
	o.str("mobile", get(fPhone))
	o.str("firm", get(fCompany))
	o.str("age", "")
	o.str("gender", get(fGender))
	for i := 1; i <= legacyExtras; i++ {
		o.str("extra"+strconv.Itoa(i), extra[i])
	}
	for i := 1; i <= legacyExtraDates; i++ {
		o.str("extra_date"+strconv.Itoa(i), extraDate[i])
	}
	o.str("date_created", formatMS(s.created))
	o.str("date_updated", formatMS(s.updated))
	return o.done()
}
