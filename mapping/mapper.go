package mapping

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/vm"

	"github.com/subsync/subsync/internal/rejectfile"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// Length limits, in characters, of the values subsync sends. A longer value is rejected
// (too_long), never truncated. The service states no limits; these are generous for real
// data and keep a runaway cell (a whole paragraph in a name) out of the service.
// An e-mail address is limited to 254 bytes (RFC 5321); a phone number is at most 15 digits
// (E.164); dates, genders, consents and statuses are normalised to short fixed values.
const (
	MaxName       = 100 // firstname, lastname
	MaxAddress    = 200
	MaxZip        = 20
	MaxCity       = 100
	MaxCompany    = 200
	MaxExternalID = 100 // external_id, a CRM id
	MaxCustomText = 255 // a string custom field, and each choice
	MaxTag        = 100 // each tag
)

// rulesVersion names the normalisation rules; it is part of every Fingerprint, so a change
// of the rules (bump it) invalidates delta fingerprints as a change of mapping does.
const rulesVersion = "subsync-mapping-rules/2"

type kind uint8

const (
	kEmail kind = iota
	kText
	kPhone
	kBirthday
	kGender
	kConsent
	kCustomText
	kCustomNumber
	kCustomDate
	kCustomChoice
	kCustomMulti
	kStatus
	kStatusMobile
	kTags
	kFullName
)

type op struct {
	col     int    // index in the record
	column  string // the column's name in the header
	kind    kind
	name    string // subscriber field, consent field or EXTRA slot
	field   field  // kText: name as a field of sink.Subscriber
	label   string // custom field label
	limit   int    // kText, kCustomText
	choices []string
	sep     string
	what    string // how a message names the value: "the phone number"
	slot    int    // consent and custom fields: index in Mapper.fields
	asIs    bool   // values may be mapped as they stand (see applyAsIs)
	drop    bool   // an invalid value is dropped with a warning (on_invalid = "drop")
	// kBirthday, kCustomDate: the dates the field takes, in the column's order.
	date dateRule
	// kEmail: the fallback columns (indexes in the record, and names), in order.
	alts     []int
	altNames []string
}

// Row is a source row mapped to a subscriber payload.
//
// Status and StatusMobile are "" unless the mapping gives unsubscribed or bounce (a status
// column or constant), or reactivate (a constant only), or a consent column says no: a "no"
// (nei, 0, false …) in SAMTYKKEEPOST makes Status unsubscribed, and a "no" in SAMTYKKESMS makes
// StatusMobile unsubscribed. SAMTYKKEEPOSTOGSMS counts for both when the specific field is not
// mapped or empty. A "no" leaves bounce as it is. Neither a status of active nor a "yes" ever
// sets a status, so no source value asks the service to activate anyone.
//
// Sub.Tags may be shared between rows when only constant tags apply: treat it as read-only.
type Row struct {
	Ordinal      int64
	Line         int
	Sheet        string
	Sub          sink.Subscriber
	Status       string
	StatusMobile string
}

// Mapper turns source records into subscriber payloads. It is immutable once compiled and
// safe for concurrent use.
type Mapper struct {
	header     []string
	ops        []op // the email op first
	base       sink.Subscriber
	hasBase    bool         // base has a value: a constant
	fields     []sink.Field // every consent and custom field a payload can have, by name, with constant values
	baseTags   []string
	status     string // constant status
	statusMob  string
	hasConsent bool
	// consent are the slots in fields of SAMTYKKEEPOST, SAMTYKKESMS and SAMTYKKEEPOSTOGSMS,
	// -1 for one the mapping does not give.
	consent     [3]int
	hasTagCols  bool
	country     string // default country calling code, digits only
	birthday    dateRule
	custDate    dateRule
	duplicates  string
	plan        []PlanEntry
	unplaced    []string
	fingerprint string
	spec        Spec
	// where leaves out the rows for which it is false (nil: none); computed are the targets
	// expressions compute (see expr.go).
	where    *vm.Program
	computed []computedOp
	// restore: the source is a rejects export (it has columns named rejectfile.Prefix…):
	// its cells are read with the export's formula quoting taken away (rejectfile.Restore).
	restore bool
}

// PlanEntry says what happens to one source column.
type PlanEntry struct {
	Column   string `json:"column"`
	Target   string `json:"target,omitempty"` // as in a mapping: "email", "custom:Kilde", "ignore"; "" when unplaced
	Slot     string `json:"slot,omitempty"`   // the EXTRA<n> slot of a custom field
	Datatype string `json:"datatype,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Compile checks a spec against a source's header and the service's custom fields, and
// returns the Mapper. An invalid mapping is a *SpecError that lists every problem, each naming
// its key: an unknown target, a column the source lacks, a custom field label the service
// does not have (without create_missing), a datatype that differs from the service's, two
// columns for one field, a constant that fails its field's checks, no e-mail column.
func Compile(spec Spec, header []string, fields Fields) (*Mapper, error) {
	return compile(spec, header, fields, civilOf(time.Now()))
}

func compile(spec Spec, header []string, fields Fields, today civil) (*Mapper, error) {
	var e SpecError
	m := &Mapper{
		header:     slices.Clone(header),
		birthday:   birthdayRule(today),
		custDate:   customDateRule(today),
		duplicates: cmp.Or(spec.Duplicates, DuplicatesLast),
		spec:       spec,
	}
	country := cmp.Or(spec.DefaultCountry, DefaultCountry)
	cc, ok := parseCountry(country)
	if !ok {
		e.add("default_country", "%q is not a country calling code (such as \"+47\")", country)
	}
	m.country = cc
	if !slices.Contains([]string{DuplicatesLast, DuplicatesFirst, DuplicatesReject}, m.duplicates) {
		e.add("duplicates", "want \"last\", \"first\" or \"reject\", got %q", m.duplicates)
	}
	if spec.OnInvalid != "" && spec.OnInvalid != OnInvalidReject && spec.OnInvalid != OnInvalidDrop {
		e.add("on_invalid", "want \"reject\" or \"drop\", got %q", spec.OnInvalid)
	}

	// Where each header column goes.
	m.plan = make([]PlanEntry, len(header))
	for i, h := range header {
		m.plan[i] = PlanEntry{Column: h}
	}
	targets := map[string]string{} // target → key that claimed it
	failed := map[string]bool{}    // targets of columns with a problem
	mappedBy := map[int]string{}   // header index → key that mapped it
	claim := func(target, key string) {
		if target == TargetTags || target == TargetIgnore {
			return
		}
		if prev, ok := targets[target]; ok {
			e.add(key, "%s is already mapped by %s", target, prev)
			return
		}
		targets[target] = key
	}
	for _, col := range sortedKeys(spec.Columns) {
		c := spec.Columns[col]
		key := keyPath("columns", col)
		t, err := parseTarget(targetString(c))
		if err != nil {
			e.add(key, "%v", err)
			continue
		}
		c.To, c.Custom = t.To, t.Custom
		idx, msg := findColumn(header, col)
		if msg != "" {
			e.add(key, "%s", msg)
			failed[c.To] = true
			continue
		}
		p := &m.plan[idx]
		if prev, ok := mappedBy[idx]; ok {
			e.add(key, "column %q is already mapped by %s", header[idx], prev)
			continue
		}
		mappedBy[idx] = key
		p.Target = targetString(c)
		if c.To == TargetIgnore {
			continue
		}
		claim(p.Target, key)
		o, msg := m.columnOp(c, fields, spec.CreateMissing, p)
		if msg != "" {
			e.add(key, "%s", msg)
			continue
		}
		o.col, o.column, o.field = idx, header[idx], fieldNamed(o.name)
		o.drop = cmp.Or(c.OnInvalid, spec.OnInvalid) == OnInvalidDrop && optional(c.To)
		m.fallbacks(&e, &o, c, key, mappedBy)
		m.ops = append(m.ops, o)
	}
	for _, col := range spec.Ignore {
		if idx, msg := findColumn(header, col); msg == "" && m.plan[idx].Target == "" {
			m.plan[idx].Target = TargetIgnore
		}
	}
	for i, p := range m.plan {
		if strings.HasPrefix(p.Column, rejectfile.Prefix) {
			m.restore = true
			if p.Target == "" {
				m.plan[i].Target, m.plan[i].Note = TargetIgnore, "a column of subsync's rejects export: ignored"
			}
			continue
		}
		if p.Target == "" {
			m.unplaced = append(m.unplaced, p.Column)
		}
	}
	for i := range m.plan {
		switch m.plan[i].Target {
		case "":
			m.plan[i].Note = "not mapped: not sent"
		case TargetIgnore:
			m.plan[i].Note = cmp.Or(m.plan[i].Note, "ignored")
		}
	}
	if _, ok := targets[sink.FieldEmail]; !ok && !failed[sink.FieldEmail] {
		e.add("columns", "no column is mapped to email (map one, e.g. \"E-post\" = \"email\")")
	}
	// The e-mail first, so a row without one is reported as such; then source order.
	slices.SortStableFunc(m.ops, func(a, b op) int {
		if (a.kind == kEmail) != (b.kind == kEmail) {
			if a.kind == kEmail {
				return -1
			}
			return 1
		}
		return a.col - b.col
	})
	for _, o := range m.ops {
		switch o.kind {
		case kConsent:
			m.hasConsent = true
			m.fields = append(m.fields, sink.Field{Name: o.name})
		case kCustomText, kCustomNumber, kCustomDate, kCustomChoice, kCustomMulti:
			m.fields = append(m.fields, sink.Field{Name: o.name})
		case kTags:
			m.hasTagCols = true
		}
	}
	m.compileConstants(&e, spec, fields, claim)
	m.compileExprs(&e, spec, fields, claim)
	// A payload's fields in name order, the order they are encoded in; each op writes its slot.
	slices.SortFunc(m.fields, func(a, b sink.Field) int { return strings.Compare(a.Name, b.Name) })
	for i, name := range []string{sink.ConsentEmail, sink.ConsentSMS, sink.ConsentEmailAndSMS} {
		m.consent[i] = slices.IndexFunc(m.fields, func(f sink.Field) bool { return f.Name == name })
	}
	for i := range m.ops {
		o := &m.ops[i]
		o.slot = slices.IndexFunc(m.fields, func(f sink.Field) bool { return f.Name == o.name })
		switch o.kind {
		case kEmail, kPhone, kBirthday, kConsent, kCustomNumber, kCustomDate:
			o.asIs = true
		}
	}
	for i, t := range spec.Tags {
		v, ok := clean(t)
		switch {
		case !ok || v == "":
			e.add(fmt.Sprintf("tags[%d]", i), "a tag cannot be empty")
		case utf8.RuneCountInString(v) > MaxTag:
			e.add(fmt.Sprintf("tags[%d]", i), "a tag has at most %d characters", MaxTag)
		case !slices.Contains(m.baseTags, v):
			m.baseTags = append(m.baseTags, v)
		}
	}
	m.baseTags = slices.Clip(m.baseTags)
	if err := e.orNil(); err != nil {
		return nil, err
	}
	m.hasBase = !reflect.ValueOf(m.base).IsZero()
	m.fingerprint = m.computeFingerprint()
	return m, nil
}

// findColumn finds a mapping's column in the header: the exact name, or the one name equal
// to it ignoring case.
func findColumn(header []string, col string) (int, string) {
	found := -1
	for i, h := range header {
		if h == col {
			if found >= 0 {
				return 0, fmt.Sprintf("the source has two columns named %q", col)
			}
			found = i
		}
	}
	if found >= 0 {
		return found, ""
	}
	for i, h := range header {
		if strings.EqualFold(strings.TrimSpace(h), col) {
			if found >= 0 {
				return 0, fmt.Sprintf("column %q matches both %q and %q; name it exactly", col, header[found], h)
			}
			found = i
		}
	}
	if found >= 0 {
		return found, ""
	}
	list := make([]string, 0, len(header))
	for _, h := range header {
		list = append(list, strconv.Quote(h))
	}
	if len(list) > 12 {
		list = append(list[:12], "…")
	}
	return 0, fmt.Sprintf("the source has no column %q (it has %s)", col, strings.Join(list, ", "))
}

// columnOp builds the op of one mapped column (without its position).
func (m *Mapper) columnOp(c Column, fields Fields, createMissing bool, p *PlanEntry) (op, string) {
	switch c.To {
	case sink.FieldEmail:
		return op{kind: kEmail, name: c.To, what: "the e-mail address"}, ""
	case sink.FieldFirstname, sink.FieldLastname:
		return op{kind: kText, name: c.To, limit: MaxName, what: "the " + c.To}, ""
	case sink.FieldAddress:
		return op{kind: kText, name: c.To, limit: MaxAddress, what: "the address"}, ""
	case sink.FieldZip:
		return op{kind: kText, name: c.To, limit: MaxZip, what: "the zip code"}, ""
	case sink.FieldCity:
		return op{kind: kText, name: c.To, limit: MaxCity, what: "the city"}, ""
	case sink.FieldCompany:
		return op{kind: kText, name: c.To, limit: MaxCompany, what: "the company"}, ""
	case sink.FieldExternalID:
		return op{kind: kText, name: c.To, limit: MaxExternalID, what: "the external id"}, ""
	case sink.FieldPhone:
		return op{kind: kPhone, name: c.To, what: "the phone number"}, ""
	case sink.FieldBirthday:
		return op{kind: kBirthday, name: c.To, what: "the birthday", date: m.dateRule(m.birthday, c)}, ""
	case sink.FieldGender:
		return op{kind: kGender, name: c.To, what: "the gender"}, ""
	case TargetStatus:
		return op{kind: kStatus, what: "the status"}, ""
	case TargetStatusMobile:
		return op{kind: kStatusMobile, what: "the SMS status"}, ""
	case TargetTags:
		return op{kind: kTags, sep: cmp.Or(c.Separator, DefaultSeparator), limit: MaxTag, what: "a tag"}, ""
	case TargetFullName:
		return op{kind: kFullName, sep: cmp.Or(c.Split, SplitLastWord), limit: MaxName, what: "the full name"}, ""
	case TargetCustom:
		return m.customOp(c, fields, createMissing, p)
	}
	if slices.Contains(sink.ConsentFields, c.To) {
		return op{kind: kConsent, name: c.To, what: "the consent " + c.To}, ""
	}
	return op{}, fmt.Sprintf("unknown target %q", c.To)
}

func (m *Mapper) customOp(c Column, fields Fields, createMissing bool, p *PlanEntry) (op, string) {
	if c.Datatype != "" && !slices.Contains(datatypes, c.Datatype) {
		return op{}, fmt.Sprintf("unknown datatype %q (want one of %s)", c.Datatype, strings.Join(datatypes, ", "))
	}
	f, ok, err := fields.lookup(c.Custom)
	switch {
	case err != nil:
		return op{}, err.Error()
	case !ok && createMissing:
		return op{}, fmt.Sprintf("custom field %q does not exist and was not created (resolve the mapping's fields first)", c.Custom)
	case !ok:
		return op{}, fmt.Sprintf("the service has no custom field %q (create it, or set create_missing = true)", c.Custom)
	case c.Datatype != "" && f.Datatype != "" && c.Datatype != f.Datatype:
		return op{}, fmt.Sprintf("custom field %q is %s in the service, not %s", c.Custom, f.Datatype, c.Datatype)
	case f.Value == "":
		return op{}, fmt.Sprintf("custom field %q has no slot (EXTRA<n>) in the service", c.Custom)
	}
	datatype := cmp.Or(f.Datatype, c.Datatype, sink.DatatypeString)
	choices := f.Choices
	if len(choices) == 0 {
		choices = c.Choices
	}
	p.Slot, p.Datatype = f.Value, datatype
	if strings.HasPrefix(f.Value, PlannedSlot) {
		p.Slot, p.Note = "", "would be created"
	}
	o := op{name: f.Value, label: f.Label, choices: choices, what: "the value of " + strconv.Quote(f.Label)}
	switch datatype {
	case sink.DatatypeNumber:
		o.kind = kCustomNumber
	case sink.DatatypeDate:
		o.kind = kCustomDate
		o.date = m.dateRule(m.custDate, c)
	case sink.DatatypeSingleChoice, sink.DatatypeDropdown:
		o.kind = kCustomChoice
		o.limit = MaxCustomText
	case sink.DatatypeMultipleChoice:
		o.kind = kCustomMulti
		o.limit = MaxCustomText
		o.sep = cmp.Or(c.Separator, DefaultSeparator)
	default:
		o.kind = kCustomText
		o.limit = MaxCustomText
	}
	return o, ""
}

// compileConstants checks each constant with the rules of its target and stores the result in
// the base payload every row starts from.
func (m *Mapper) compileConstants(e *SpecError, spec Spec, fields Fields, claim func(target, key string)) {
	for _, target := range sortedKeys(spec.Constants) {
		key := keyPath("constants", target)
		c, err := parseTarget(target)
		if err != nil {
			e.add(key, "%v", err)
			continue
		}
		switch c.To {
		case sink.FieldEmail, TargetTags, TargetIgnore:
			e.add(key, "%s cannot be a constant", c.To)
			continue
		}
		claim(targetString(c), key)
		value := spec.Constants[target]
		if (c.To == TargetStatus || c.To == TargetStatusMobile) && strings.EqualFold(strings.TrimSpace(value), sink.StatusReactivate) {
			// A person wrote it in the mapping: that is asking for it explicitly.
			if c.To == TargetStatus {
				m.status = sink.StatusReactivate
			} else {
				m.statusMob = sink.StatusReactivate
			}
			continue
		}
		var p PlanEntry
		o, msg := m.columnOp(c, fields, spec.CreateMissing, &p)
		if msg != "" {
			e.add(key, "%s", msg)
			continue
		}
		var row Row
		if rej := m.apply(nil, &row, &o, &sources.Record{}, value); rej != nil {
			e.add(key, "%s", rej.Message)
			continue
		}
		switch o.kind {
		case kStatus:
			m.status = row.Status
		case kStatusMobile:
			m.statusMob = row.StatusMobile
		case kConsent, kCustomText, kCustomNumber, kCustomDate, kCustomChoice, kCustomMulti:
			if v := row.Sub.Field(o.name); v != "" {
				m.fields = append(m.fields, sink.Field{Name: o.name, Value: v})
				if o.kind == kConsent {
					m.hasConsent = true
				}
			}
		case kFullName:
			m.base.Firstname, m.base.Lastname = row.Sub.Firstname, row.Sub.Lastname
		default:
			setField(&m.base, o.name, fieldOf(&row.Sub, o.name))
		}
	}
}

// Header returns the source header the Mapper was compiled for.
func (m *Mapper) Header() []string { return slices.Clone(m.header) }

// KeyColumn is the source column mapped to external_id (the source key, a CRM id), or ""
// when no column is: a constant external_id is no key.
func (m *Mapper) KeyColumn() string {
	for _, o := range m.ops {
		if o.name == sink.FieldExternalID {
			return o.column
		}
	}
	return ""
}

// Plan says, for every source column in order, where it goes.
func (m *Mapper) Plan() []PlanEntry { return slices.Clone(m.plan) }

// Unplaced returns the source columns that are neither mapped nor ignored: their values are
// not sent. Callers report them (a column is never dropped silently).
func (m *Mapper) Unplaced() []string { return slices.Clone(m.unplaced) }

// Duplicates returns the mapping's duplicate policy (DuplicatesLast when not given).
func (m *Mapper) Duplicates() string { return m.duplicates }

// Spec returns the spec the Mapper was compiled from.
func (m *Mapper) Spec() Spec { return m.spec }

// Fingerprint is a hash of the compiled mapping: what goes where, with which rules, the custom
// field slots and datatypes, the constants and the default country. It changes whenever a
// payload built by the mapping could change, so delta sync fingerprints made under another
// mapping are not trusted. It does not depend on column positions or on the duplicate policy.
func (m *Mapper) Fingerprint() string { return m.fingerprint }

func (m *Mapper) computeFingerprint() string {
	h := sha256.New()
	w := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(strconv.Quote(p)))
			h.Write([]byte{' '})
		}
		h.Write([]byte{'\n'})
	}
	w(rulesVersion, "country", m.country)
	ops := slices.Clone(m.ops)
	slices.SortFunc(ops, func(a, b op) int { return strings.Compare(a.column, b.column) })
	for _, o := range ops {
		w("column", o.column, strconv.Itoa(int(o.kind)), o.name, o.sep, strconv.Itoa(o.limit), string(rune(o.date.order)))
		w(append([]string{"choices"}, o.choices...)...)
		if len(o.altNames) > 0 {
			w(append([]string{"fallback"}, o.altNames...)...)
		}
	}
	w("status", m.status, m.statusMob)
	for _, f := range m.fields { // in name order
		if f.Value != "" { // a constant
			w("const", f.Name, f.Value)
		}
	}
	s := m.base
	w("base", s.Firstname, s.Lastname, s.Address, s.Zip, s.City, s.Phone, s.Company, s.Birthday, s.Gender)
	if s.ExternalID != "" { // only when set, so fingerprints of mappings without it stay as they were
		w("external_id", s.ExternalID)
	}
	w(append([]string{"tags"}, m.baseTags...)...)
	if m.spec.Where != "" {
		w("where", m.spec.Where)
	}
	for _, k := range sortedKeys(m.spec.Computed) {
		w("computed", k, m.spec.Computed[k])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Map turns one record into a payload, or into a reject naming every problem found (the
// e-mail address's first, then by column; see Reject.More). Map never modifies rec.
func (m *Mapper) Map(rec sources.Record) (Row, *Reject) { return m.MapIn(nil, rec) }

// MapIn is Map with the values it makes held in a (see Arena); a nil a is Map.
func (m *Mapper) MapIn(a *Arena, rec sources.Record) (Row, *Reject) {
	var row Row
	if rej := m.MapInto(a, &rec, &row); rej != nil {
		return Row{}, rej
	}
	return row, nil
}

// MapInto is MapIn writing the row into *row, which it overwrites whole; after a reject,
// *row holds nothing of use. The values an on_invalid = "drop" mapping drops are dropped
// without a word: [Mapper.MapWarn] says which.
func (m *Mapper) MapInto(a *Arena, rec *sources.Record, row *Row) *Reject {
	return m.MapWarn(a, rec, row, nil)
}

// MapWarn is MapInto that appends to *warnings (when warnings is not nil) a warning for each
// invalid value it dropped (on_invalid = "drop"), with the line, column, value, code and
// reason a reject would have had. It appends none for a row it rejects: the reject lists
// every problem of the row (Reject.More), those values among them.
func (m *Mapper) MapWarn(a *Arena, rec *sources.Record, row *Row, warnings *[]Reject) *Reject {
	if m.restore {
		rec = restored(rec)
	}
	var env map[string]any
	if out, rej := m.filtered(rec, &env); out || rej != nil {
		*row = Row{}
		if rej == nil {
			rej = m.rejectAt(rec, "", "", CodeFiltered, "the where expression is false for the row")
		}
		return m.rejected(rej, warnings)
	}
	*row = Row{Ordinal: rec.Ordinal, Line: rec.Line, Sheet: rec.Sheet, Status: m.status, StatusMobile: m.statusMob}
	if m.hasBase {
		row.Sub = m.base
	}
	if len(m.baseTags) > 0 {
		row.Sub.Tags = m.baseTags
	}
	if len(m.fields) > 0 {
		row.Sub.Fields = a.fieldSlice(len(m.fields))
		copy(row.Sub.Fields, m.fields)
	}
	var rej *Reject
	var dropped []Fault
	for i := range m.ops {
		o := &m.ops[i]
		raw := ""
		if o.col < len(rec.Values) {
			raw = rec.Values[o.col]
		}
		if o.asIs && m.applyAsIs(a, row, o, raw) {
			continue // apply's first step, without a call for every value
		}
		var r *Reject
		if o.kind == kEmail {
			var warns []Reject
			r, warns = m.applyEmail(a, row, o, rec, raw)
			for _, w := range warns {
				if warnings != nil {
					*warnings = append(*warnings, w)
				}
				dropped = append(dropped, w.fault())
			}
		} else {
			r = m.applyClean(a, row, o, rec, raw)
		}
		if r != nil {
			switch {
			case rej != nil:
				rej.More = append(rej.More, r.fault())
			case !o.drop && !soft(r.Code):
				rej = r
			default:
				if warnings != nil {
					*warnings = append(*warnings, *r)
				}
				dropped = append(dropped, r.fault())
			}
		}
	}
	if len(m.computed) > 0 {
		for _, r := range m.applyComputed(a, row, rec, env) {
			if rej == nil {
				rej = r
			} else {
				rej.More = append(rej.More, r.fault())
			}
		}
	}
	if rej != nil {
		// The row's problems, the first that rejects it first: a person fixes them in one go.
		if len(dropped) > 0 {
			rej.More = append(dropped, rej.More...)
		}
		return m.rejected(rej, warnings)
	}
	if m.hasConsent { // the fields still line up with m.fields
		f := row.Sub.Fields
		if m.consentNo(f, m.consent[0]) && row.Status != sink.StatusBounce {
			row.Status = sink.StatusUnsubscribed
		}
		if m.consentNo(f, m.consent[1]) && row.StatusMobile != sink.StatusBounce {
			row.StatusMobile = sink.StatusUnsubscribed
		}
	}
	if len(row.Sub.Fields) > 0 {
		// Drop the fields this row has no value for: a payload never clears a value.
		kept := row.Sub.Fields[:0]
		for _, f := range row.Sub.Fields {
			if f.Value != "" {
				kept = append(kept, f)
			}
		}
		row.Sub.Fields = kept
		if len(kept) == 0 {
			row.Sub.Fields = nil
		}
	}
	return nil
}

// dateRule is rule in the date order of column c (or of the mapping).
func (m *Mapper) dateRule(rule dateRule, c Column) dateRule {
	rule.order = orderOf(cmp.Or(c.DateFormat, m.spec.DateFormat))
	return rule
}

// soft reports whether a problem of a value is a warning whatever on_invalid says: the value
// is dropped and the row sent. A date whose order cannot be decided, or without a year, is
// not known to be wrong; it is only not sent.
func soft(code string) bool { return code == CodeAmbiguousDate || code == CodeYearlessDate }

// rejected returns rej, taking back the warnings of its row from *warnings: a reject says why
// the row is not sent; that some of its values would have been dropped does not matter.
func (m *Mapper) rejected(rej *Reject, warnings *[]Reject) *Reject {
	if warnings != nil {
		w := *warnings
		for len(w) > 0 && w[len(w)-1].Ordinal == rej.Ordinal {
			w = w[:len(w)-1]
		}
		*warnings = w
	}
	return rej
}

// restored is rec with its cells as they were before a rejects export quoted them.
func restored(rec *sources.Record) *sources.Record {
	r := *rec
	r.Values = make([]string, len(rec.Values))
	for i, v := range rec.Values {
		r.Values[i] = rejectfile.Restore(v)
	}
	return &r
}

// consentNo reports whether a row's fields f (one for each of m.fields) say no to consent:
// the specific field in slot, or else the combined SAMTYKKEEPOSTOGSMS.
func (m *Mapper) consentNo(f []sink.Field, slot int) bool {
	if slot >= 0 && f[slot].Value != "" {
		return f[slot].Value == ConsentNo
	}
	return m.consent[2] >= 0 && f[m.consent[2]].Value == ConsentNo
}

// RejectRow turns a row the source could not read into a reject, naming the column from the
// header when the error knows it.
func (m *Mapper) RejectRow(rec sources.Record, err *sources.RowError) Reject {
	r := RejectFromRowError(rec, err)
	if err.Column > 0 && err.Column <= len(m.header) {
		r.Column = m.header[err.Column-1]
	}
	return r
}

// apply maps one value (a cell, or a constant) into row, with the values it makes in a.
func (m *Mapper) apply(a *Arena, row *Row, o *op, rec *sources.Record, raw string) *Reject {
	if o.asIs && m.applyAsIs(a, row, o, raw) {
		return nil
	}
	return m.applyClean(a, row, o, rec, raw)
}

// applyClean cleans raw and maps it into row by the rules of o.
func (m *Mapper) applyClean(a *Arena, row *Row, o *op, rec *sources.Record, raw string) *Reject {
	v, ok := cleanIn(a, raw)
	if !ok {
		return m.reject(rec, o, raw, CodeInvalidEncoding, o.what+" is not valid UTF-8: the file's character encoding is probably not what subsync read it as")
	}
	if v == "" || isPlaceholder(v) && o.placeholderEmpty() {
		if o.kind == kEmail {
			return m.reject(rec, o, raw, CodeMissingEmail, "the row has no e-mail address")
		}
		return nil
	}
	switch o.kind {
	case kEmail:
		email, msg := normEmail(a, v)
		if msg != "" {
			return m.reject(rec, o, raw, CodeInvalidEmail, "the e-mail address "+msg)
		}
		row.Sub.Email = email
	case kText:
		if len(v) > o.limit {
			if n := utf8.RuneCountInString(v); n > o.limit {
				return m.tooLong(rec, o, raw, n)
			}
		}
		if o.field != fieldNone {
			*o.field.of(&row.Sub) = v
		} else {
			setField(&row.Sub, o.name, v)
		}
	case kPhone:
		p, msg := normPhone(a, v, m.country)
		if msg != "" {
			return m.reject(rec, o, raw, CodeInvalidPhone, "the phone number "+msg)
		}
		row.Sub.Phone = p
	case kBirthday:
		d, msg := normDate(a, v, o.date)
		if msg != "" {
			return m.reject(rec, o, raw, dateCode(msg), "the birthday "+msg)
		}
		row.Sub.Birthday = d
	case kGender:
		g, msg := normGender(v)
		if msg != "" {
			return m.reject(rec, o, raw, CodeInvalidGender, "the gender "+msg)
		}
		row.Sub.Gender = g
	case kConsent:
		c, msg := normYesNo(v)
		if msg != "" {
			return m.reject(rec, o, raw, CodeInvalidConsent, o.what+" "+msg)
		}
		m.putField(row, o, c)
	case kStatus, kStatusMobile:
		s, msg := normStatus(v)
		if msg != "" {
			return m.reject(rec, o, raw, CodeInvalidStatus, o.what+" "+msg)
		}
		if s == "" {
			return nil
		}
		if o.kind == kStatus {
			row.Status = s
		} else {
			row.StatusMobile = s
		}
	case kTags:
		return m.applyTags(row, o, rec, raw, v)
	case kFullName:
		first, last := splitName(v, o.sep)
		for _, part := range []string{first, last} {
			if n := utf8.RuneCountInString(part); n > o.limit {
				return m.reject(rec, o, raw, CodeTooLong, fmt.Sprintf("a name in the full name has %d characters, more than the %d allowed", n, o.limit))
			}
		}
		// A firstname or lastname column with a value wins.
		if row.Sub.Firstname == "" {
			row.Sub.Firstname = first
		}
		if row.Sub.Lastname == "" {
			row.Sub.Lastname = last
		}
	case kCustomText:
		if len(v) > o.limit {
			if n := utf8.RuneCountInString(v); n > o.limit {
				return m.tooLong(rec, o, raw, n)
			}
		}
		m.putField(row, o, v)
	case kCustomNumber:
		n, msg := normNumber(v)
		if msg != "" {
			return m.reject(rec, o, raw, CodeInvalidNumber, o.what+" "+msg)
		}
		m.putField(row, o, n)
	case kCustomDate:
		d, msg := normDate(a, v, o.date)
		if msg != "" {
			return m.reject(rec, o, raw, dateCode(msg), o.what+" "+msg)
		}
		m.putField(row, o, d)
	case kCustomChoice:
		if len(o.choices) == 0 {
			if n := utf8.RuneCountInString(v); n > o.limit {
				return m.tooLong(rec, o, raw, n)
			}
			m.putField(row, o, v)
			return nil
		}
		c, ok := matchChoice(v, o.choices)
		if !ok {
			return m.reject(rec, o, raw, CodeInvalidChoice, o.what+" is not one of its choices ("+choiceList(o.choices)+")")
		}
		m.putField(row, o, c)
	case kCustomMulti:
		var picked []string
		for part := range strings.SplitSeq(v, o.sep) {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			c := part
			if len(o.choices) > 0 {
				var ok bool
				if c, ok = matchChoice(part, o.choices); !ok {
					return m.reject(rec, o, raw, CodeInvalidChoice, o.what+" has "+strconv.Quote(part)+", not one of its choices ("+choiceList(o.choices)+")")
				}
			} else if n := utf8.RuneCountInString(c); n > o.limit {
				return m.tooLong(rec, o, part, n)
			}
			if !slices.Contains(picked, c) {
				picked = append(picked, c)
			}
		}
		if len(picked) > 0 {
			m.putField(row, o, strings.Join(picked, ","))
		}
	}
	return nil
}

// applyAsIs maps raw without cleaning it, for the kinds whose rules accept printable ASCII
// only: plain e-mail addresses, phone numbers, dates, consents and numbers. A value such a
// rule accepts with nothing but ASCII spaces trimmed from its ends is one clean would have
// left alone, or changed only in inner spaces the rule skips (phone numbers, numbers), so
// the result is the same. It reports whether it mapped the value; when it did not, apply
// cleans the value and says what is wrong with it, if anything. (Most values of these kinds
// need no cleaning: this saves a pass over them.)
func (m *Mapper) applyAsIs(a *Arena, row *Row, o *op, raw string) bool {
	v := trimSpaces(raw)
	if v == "" || isPlaceholder(v) && o.placeholderEmpty() {
		return false // apply reads a placeholder as an empty cell
	}
	var msg string
	switch o.kind {
	case kEmail:
		plain, upper := plainEmail(v)
		if !plain {
			return false
		}
		if upper {
			v = lowerLatin1(a, v)
		}
		row.Sub.Email = v
	case kPhone:
		if v, msg = normPhone(a, v, m.country); msg == "" {
			row.Sub.Phone = v
		}
	case kBirthday:
		if v, msg = normDate(a, v, o.date); msg == "" {
			row.Sub.Birthday = v
		}
	case kConsent:
		if v, msg = normYesNo(v); msg == "" {
			m.putField(row, o, v)
		}
	case kCustomNumber:
		if v, msg = normNumber(v); msg == "" {
			m.putField(row, o, v)
		}
	case kCustomDate:
		if v, msg = normDate(a, v, o.date); msg == "" {
			m.putField(row, o, v)
		}
	default:
		return false
	}
	return msg == ""
}

// trimSpaces returns s without the ASCII spaces at its ends.
func trimSpaces(s string) string {
	if len(s) == 0 || s[0] != ' ' && s[len(s)-1] != ' ' {
		return s // most values: one test
	}
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

func (m *Mapper) applyTags(row *Row, o *op, rec *sources.Record, raw, v string) *Reject {
	var tags []string
	if len(row.Sub.Tags) > 0 {
		tags = make([]string, len(row.Sub.Tags), len(row.Sub.Tags)+4)
		copy(tags, row.Sub.Tags)
	}
	for part := range strings.SplitSeq(v, o.sep) {
		part = strings.TrimSpace(part)
		// Mailchimp quotes each tag: "Customer","VIP".
		for len(part) >= 2 && part[0] == '"' && part[len(part)-1] == '"' {
			part = strings.TrimSpace(part[1 : len(part)-1])
		}
		if part == "" {
			continue
		}
		if n := utf8.RuneCountInString(part); n > MaxTag {
			return m.tooLong(rec, o, part, n)
		}
		if !slices.Contains(tags, part) {
			tags = append(tags, part)
		}
	}
	if len(tags) > 0 {
		row.Sub.Tags = tags
	}
	return nil
}

func choiceList(choices []string) string {
	const show = 8
	q := make([]string, 0, min(len(choices), show)+1)
	for i, c := range choices {
		if i == show {
			q = append(q, "…")
			break
		}
		q = append(q, strconv.Quote(c))
	}
	return strings.Join(q, ", ")
}

func (m *Mapper) tooLong(rec *sources.Record, o *op, raw string, n int) *Reject {
	return m.reject(rec, o, raw, CodeTooLong, fmt.Sprintf("%s has %d characters, more than the %d allowed", o.what, n, o.limit))
}

func (m *Mapper) reject(rec *sources.Record, o *op, raw, code, msg string) *Reject {
	return &Reject{
		Ordinal: rec.Ordinal,
		Line:    rec.Line,
		Sheet:   rec.Sheet,
		Column:  o.column,
		Value:   shorten(raw, maxRejectValue),
		Code:    code,
		Message: msg,
	}
}

// putField sets the consent or custom field of o: in its slot when the row has the
// Mapper's fields (every row Map makes), else by name (a constant being compiled).
func (m *Mapper) putField(row *Row, o *op, v string) {
	if f := row.Sub.Fields; o.slot >= 0 && o.slot < len(f) {
		f[o.slot].Value = v
		return
	}
	row.Sub.SetField(o.name, v)
}

// field names a text field of sink.Subscriber, resolved once when a mapping is compiled
// rather than by name for every value.
type field uint8

const (
	fieldNone field = iota
	fieldFirstname
	fieldLastname
	fieldAddress
	fieldZip
	fieldCity
	fieldCompany
	fieldExternalID
)

func fieldNamed(name string) field {
	switch name {
	case sink.FieldFirstname:
		return fieldFirstname
	case sink.FieldLastname:
		return fieldLastname
	case sink.FieldAddress:
		return fieldAddress
	case sink.FieldZip:
		return fieldZip
	case sink.FieldCity:
		return fieldCity
	case sink.FieldCompany:
		return fieldCompany
	case sink.FieldExternalID:
		return fieldExternalID
	}
	return fieldNone
}

// of returns the address of the field in s; f must not be fieldNone.
func (f field) of(s *sink.Subscriber) *string {
	switch f {
	case fieldFirstname:
		return &s.Firstname
	case fieldLastname:
		return &s.Lastname
	case fieldAddress:
		return &s.Address
	case fieldZip:
		return &s.Zip
	case fieldCity:
		return &s.City
	case fieldExternalID:
		return &s.ExternalID
	}
	return &s.Company
}

// fieldPtr returns the address of the standard field name in s, or nil for any other name.
func fieldPtr(s *sink.Subscriber, name string) *string {
	switch name {
	case sink.FieldEmail:
		return &s.Email
	case sink.FieldFirstname:
		return &s.Firstname
	case sink.FieldLastname:
		return &s.Lastname
	case sink.FieldAddress:
		return &s.Address
	case sink.FieldZip:
		return &s.Zip
	case sink.FieldCity:
		return &s.City
	case sink.FieldPhone:
		return &s.Phone
	case sink.FieldCompany:
		return &s.Company
	case sink.FieldBirthday:
		return &s.Birthday
	case sink.FieldGender:
		return &s.Gender
	case sink.FieldExternalID:
		return &s.ExternalID
	}
	return nil
}

// setField sets the standard field name in s; other names are ignored.
func setField(s *sink.Subscriber, name, v string) {
	if p := fieldPtr(s, name); p != nil {
		*p = v
	}
}

// fieldOf returns the standard field name of s, or "" for any other name.
func fieldOf(s *sink.Subscriber, name string) string {
	if p := fieldPtr(s, name); p != nil {
		return *p
	}
	return ""
}
