package sinktest

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// Field indexes. The standard fields and the consent fields have fixed indexes; the custom
// field slot EXTRA<n> has index fieldExtraBase+n. A subscriber's fields are stored as one
// compact string (see encodeFields), keyed by these indexes.
const (
	fFirstname = iota
	fLastname
	fAddress
	fZip
	fCity
	fPhone
	fCompany
	fBirthday
	fGender
	fConsentEmail
	fConsentSMS
	fConsentEmailAndSMS
	fConsentPrivacy
	fExternalID
	fieldExtraBase = fExternalID // EXTRA1 has index fieldExtraBase+1
)

var stdFieldNames = [...]string{
	fFirstname: "firstname", fLastname: "lastname", fAddress: "address", fZip: "zip", fCity: "city",
	fPhone: "phone", fCompany: "company", fBirthday: "birthday", fGender: "gender",
	fConsentEmail: "SAMTYKKEEPOST", fConsentSMS: "SAMTYKKESMS",
	fConsentEmailAndSMS: "SAMTYKKEEPOSTOGSMS", fConsentPrivacy: "PERSONVERNERKLRING",
	fExternalID: "external_id",
}

// stdField returns the index of a standard or consent field name (a switch: faster than a
// map for the dozen lookups of every row).
func stdField(name string) (int, bool) {
	switch name {
	case "firstname":
		return fFirstname, true
	case "lastname":
		return fLastname, true
	case "address":
		return fAddress, true
	case "zip":
		return fZip, true
	case "city":
		return fCity, true
	case "phone":
		return fPhone, true
	case "company":
		return fCompany, true
	case "birthday":
		return fBirthday, true
	case "gender":
		return fGender, true
	case "SAMTYKKEEPOST":
		return fConsentEmail, true
	case "SAMTYKKESMS":
		return fConsentSMS, true
	case "SAMTYKKEEPOSTOGSMS":
		return fConsentEmailAndSMS, true
	case "PERSONVERNERKLRING":
		return fConsentPrivacy, true
	case "external_id":
		return fExternalID, true
	}
	return 0, false
}

func fieldName(idx int) string {
	if idx < len(stdFieldNames) {
		return stdFieldNames[idx]
	}
	return "EXTRA" + strconv.Itoa(idx-fieldExtraBase)
}

// parseSlot returns n for "EXTRA<n>" (n >= 1, no sign, no leading zero).
func parseSlot(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "EXTRA")
	if !ok || digits == "" || digits[0] == '0' || len(digits) > 6 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

type fieldKV struct {
	idx int
	val string
}

// appendFields packs kvs (sorted by idx, values non-empty) as uvarint(idx) uvarint(len) value...
func appendFields(b []byte, kvs []fieldKV) []byte {
	for _, kv := range kvs {
		b = binary.AppendUvarint(b, uint64(kv.idx))
		b = binary.AppendUvarint(b, uint64(len(kv.val)))
		b = append(b, kv.val...)
	}
	return b
}

// decodeFields appends the fields packed in s to dst. Values are substrings of s.
func decodeFields(dst []fieldKV, s string) []fieldKV {
	for len(s) > 0 {
		idx, n := uvarint(s)
		s = s[n:]
		l, n := uvarint(s)
		s = s[n:]
		dst = append(dst, fieldKV{idx: int(idx), val: s[:l]})
		s = s[l:]
	}
	return dst
}

func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 {
			return x | uint64(c)<<shift, i + 1
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	panic("sinktest: corrupt field encoding")
}

// merger overlays updates on packed fields, reusing its buffers between calls.
type merger struct {
	old, out []fieldKV
	buf      []byte
}

// merge overlays upd (sorted by idx) on the fields packed in cur and returns the new packing
// (cur itself when nothing changes).
func (mg *merger) merge(cur string, upd []fieldKV) string {
	b, changed := mg.mergeBytes(cur, upd)
	if !changed {
		return cur
	}
	return string(b)
}

// mergeBytes overlays upd (sorted by idx) on the fields packed in cur and returns the new
// packing, in a buffer of mg's that the next call reuses, and whether it differs from cur.
func (mg *merger) mergeBytes(cur string, upd []fieldKV) ([]byte, bool) {
	if len(upd) == 0 {
		return nil, false
	}
	mg.old = decodeFields(mg.old[:0], cur)
	old, out := mg.old, mg.out[:0]
	i, j := 0, 0
	for i < len(old) || j < len(upd) {
		switch {
		case j == len(upd) || (i < len(old) && old[i].idx < upd[j].idx):
			out = append(out, old[i])
			i++
		case i == len(old) || upd[j].idx < old[i].idx:
			out = append(out, upd[j])
			j++
		default: // same field: the update wins
			out = append(out, upd[j])
			i++
			j++
		}
	}
	mg.out = out
	mg.buf = appendFields(mg.buf[:0], out)
	return mg.buf, string(mg.buf) != cur
}

// lookupField returns the value of field idx packed in s.
func lookupField(s string, idx int) string {
	for len(s) > 0 {
		i, n := uvarint(s)
		s = s[n:]
		l, n := uvarint(s)
		s = s[n:]
		if int(i) == idx {
			return s[:l]
		}
		s = s[l:]
	}
	return ""
}
