package mapping

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/subsync/subsync/internal/tomlguard"
	"github.com/subsync/subsync/sink"
)

// Targets of a column besides the subscriber and consent fields.
const (
	TargetStatus       = "status"        // the e-mail status of the subscriber
	TargetStatusMobile = "status_mobile" // the SMS status of the subscriber
	TargetTags         = "tags"          // tags, split on Column.Separator
	TargetIgnore       = "ignore"        // the column is read and deliberately not sent
	TargetCustom       = "custom"        // a custom field, named by Column.Custom (its label)
	// TargetFullName is a full name ("Kari Anne Hansen"), split into firstname and lastname
	// (by Column.Split); a firstname or lastname column with a value wins over it.
	TargetFullName = "fullname"
)

// How a full name is split (Column.Split). "Hansen, Kari Anne" (a comma) is always last name
// first.
const (
	SplitLastWord  = "last-word"  // the last word is the last name: "Kari Anne | Hansen" (the default)
	SplitFirstWord = "first-word" // the first word is the first name: "Kari | Anne Hansen"
	SplitLastFirst = "last-first" // the first word is the last name: "Hansen | Kari Anne"
)

var splits = []string{SplitLastWord, SplitFirstWord, SplitLastFirst}

// Duplicate policies: what a run does with a second row for an e-mail address it has seen.
const (
	DuplicatesLast   = "last"   // the later row is sent too, so its values win (the default)
	DuplicatesFirst  = "first"  // the later row is skipped and counted
	DuplicatesReject = "reject" // the later row is a reject with code duplicate_email
)

// What becomes of a row with an invalid optional value (a phone number, a birthday, a custom
// field …): the mapping's on_invalid, or a column's.
const (
	OnInvalidReject = "reject" // the row is a reject (the default)
	OnInvalidDrop   = "drop"   // the value is dropped, the rest of the row sent, and a warning recorded
)

// DefaultSeparator splits tags and multiple-choice values when a column gives no separator.
const DefaultSeparator = ","

var standardFields = []string{
	sink.FieldEmail, sink.FieldFirstname, sink.FieldLastname, sink.FieldAddress, sink.FieldZip,
	sink.FieldCity, sink.FieldPhone, sink.FieldCompany, sink.FieldBirthday, sink.FieldGender,
	sink.FieldExternalID,
}

var datatypes = []string{
	sink.DatatypeString, sink.DatatypeNumber, sink.DatatypeDate, sink.DatatypeSingleChoice, sink.DatatypeMultipleChoice, sink.DatatypeDropdown,
}

// Spec is a mapping as a person writes it, in a sync's config (`[syncs.mapping]`) or in a
// file given with --mapping. Its TOML form:
//
//	create_missing  = true      # create custom fields the service lacks (default false)
//	duplicates      = "last"    # last | first | reject (default last)
//	default_country = "+47"     # country code of phone numbers written without one
//	ignore          = ["Notat"] # columns deliberately not sent
//	on_invalid      = "reject"  # an invalid optional value: reject the row, or "drop" the value
//	tags            = ["import"] # tags added to every row
//	auto            = false     # map only the columns named below (default true: the
//	                            # header's other columns are mapped by their names)
//
//	[columns]
//	"E-post"     = "email"         # a subscriber field: email firstname lastname address zip
//	"Fornavn"    = "firstname"     #   city phone company birthday gender
//	"Nyhetsbrev" = "SAMTYKKEEPOST" # a consent field (SAMTYKKESMS, SAMTYKKEEPOSTOGSMS, PERSONVERNERKLRING)
//	"Status"     = "status"        # status or status_mobile
//	"Grupper"    = { to = "tags", separator = ";" }
//	"Kilde"      = "custom:Kilde"  # a custom field by label; its datatype comes from the service
//	"Interesser" = { custom = "Interesser", datatype = "multiple_choice", choices = ["Ski", "Fotball"], separator = ";" }
//	"Intern ID"  = "ignore"
//	"Mobil"      = { to = "phone", on_invalid = "drop" } # this column only
//
//	[constants]
//	company = "Acme AS"           # any target but email and tags; values go through the same checks
//	"custom:Kilde" = "CSV-import"
//
// A file may also hold the same keys under a single [mapping] table. Unknown keys are errors.
// The zero Spec has no columns: [Spec.WithAuto] fills them from the header.
type Spec struct {
	Columns        map[string]Column `json:"columns,omitempty"`
	Constants      map[string]string `json:"constants,omitempty"`
	Tags           []string          `json:"tags,omitempty"`
	Ignore         []string          `json:"ignore,omitempty"`
	CreateMissing  bool              `json:"create_missing,omitempty"`
	Duplicates     string            `json:"duplicates,omitempty"`
	DefaultCountry string            `json:"default_country,omitempty"`
	// OnInvalid is what an invalid value of an optional column does to its row:
	// OnInvalidReject ("" too) or OnInvalidDrop. A column's own OnInvalid wins. The e-mail,
	// consent, status and external_id columns are never optional: their invalid values
	// always reject the row.
	OnInvalid string `json:"on_invalid,omitempty"`
	// DateFormat is the order of the dates of every date column that gives none.
	DateFormat string `json:"date_format,omitempty"`
	// Where is an expression over the row's columns (Land == "NO"): a row for which it is
	// false is left out and counted as filtered, not rejected.
	Where string `json:"where,omitempty"`
	// Computed are targets whose values expressions compute from the row's columns
	// (firstname = 'split(Navn, " ")[0]'), checked as a column's values are.
	Computed map[string]string `json:"computed,omitempty"`
	// NoAuto (auto = false in TOML) maps only the columns the spec names: without it, the
	// header's other columns are mapped by their names as with no mapping (see
	// [Spec.WithAuto]).
	NoAuto bool `json:"no_auto,omitempty"`
}

// Column says where one source column goes.
type Column struct {
	// To is the target: a subscriber field (sink.FieldEmail …), a consent field
	// (sink.ConsentEmail …), TargetStatus, TargetStatusMobile, TargetTags, TargetIgnore, or
	// TargetCustom with the label in Custom.
	To string `json:"to"`
	// Custom is the label of the custom field when To is TargetCustom.
	Custom string `json:"custom,omitempty"`
	// Datatype is the custom field's datatype, used to create it (create_missing) and checked
	// against the service's. Empty means: whatever the service has, or string when created.
	Datatype string `json:"datatype,omitempty"`
	// Choices are the allowed values of a choice field, used to create it, and to check values
	// when the service reports none.
	Choices []string `json:"choices,omitempty"`
	// Separator splits tags and multiple-choice values; DefaultSeparator when empty.
	Separator string `json:"separator,omitempty"`
	// OnInvalid is Spec.OnInvalid for this column ("": the mapping's).
	OnInvalid string `json:"on_invalid,omitempty"`
	// Split is how a full name (TargetFullName) is split: SplitLastWord when empty.
	Split string `json:"split,omitempty"`
	// Fallback are the columns an e-mail column falls back on, in order: the first of the
	// column and its fallbacks with a valid address is sent.
	Fallback []string `json:"fallback,omitempty"`
	// DateFormat is the order of the column's dates (DateDayFirst, DateMonthFirst,
	// DateYearFirst); "" is Spec.DateFormat, or else decided from the file (see
	// Spec.WithDateOrders).
	DateFormat string `json:"date_format,omitempty"`
}

// SpecError says why a mapping is invalid. It lists every problem found, each naming the key
// (as in the TOML) or the column it concerns.
type SpecError struct {
	Problems []Problem
}

// Problem is one reason a mapping is invalid.
type Problem struct {
	Key     string // the TOML key path ("columns.\"E-post\".datatype") or "" for the whole mapping
	Message string
}

// Error lists the problems, each after its key.
func (e *SpecError) Error() string {
	var b strings.Builder
	b.WriteString("invalid mapping: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		if p.Key != "" {
			b.WriteString(p.Key)
			b.WriteString(": ")
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

func (e *SpecError) add(key, format string, args ...any) {
	e.Problems = append(e.Problems, Problem{Key: key, Message: fmt.Sprintf(format, args...)})
}

func (e *SpecError) orNil() error {
	if e == nil || len(e.Problems) == 0 {
		return nil
	}
	return e
}

// LoadSpec reads a mapping file. Errors name the file, and the key for an invalid key.
func LoadSpec(path string) (Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return Spec{}, fmt.Errorf("read mapping: %w", err)
	}
	defer f.Close()
	data, err := tomlguard.Read(f)
	if err != nil {
		return Spec{}, fmt.Errorf("read mapping %s: %w", path, err)
	}
	s, err := ParseSpec(data)
	if err != nil {
		return Spec{}, fmt.Errorf("mapping %s: %w", path, err)
	}
	return s, nil
}

// ParseSpec parses a mapping in TOML. A syntax error carries its line; an invalid key or value
// is a *SpecError naming the key.
func ParseSpec(data []byte) (Spec, error) {
	// Before parsing: the parser's memory is out of proportion to some small files.
	if err := tomlguard.Check(data); err != nil {
		return Spec{}, fmt.Errorf("parse mapping: %w", err)
	}
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		return Spec{}, fmt.Errorf("parse mapping: %w", err)
	}
	if len(raw) == 1 {
		if inner, ok := raw["mapping"].(map[string]any); ok {
			raw = inner
		}
	}
	var s Spec
	if err := s.fromMap(raw); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// UnmarshalTOML decodes a Spec from its TOML table, so a config struct can hold a Spec field.
// Unknown keys are errors (*SpecError), as the config's own unknown keys are.
func (s *Spec) UnmarshalTOML(data any) error {
	m, ok := data.(map[string]any)
	if !ok {
		return &SpecError{Problems: []Problem{{Message: fmt.Sprintf("want a table, got %s", tomlType(data))}}}
	}
	return s.fromMap(m)
}

func (s *Spec) fromMap(m map[string]any) error {
	var e SpecError
	*s = Spec{}
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "columns":
			t, ok := v.(map[string]any)
			if !ok {
				e.add(k, "want a table of column = target, got %s", tomlType(v))
				continue
			}
			s.Columns = make(map[string]Column, len(t))
			for _, col := range sortedKeys(t) {
				key := keyPath("columns", col)
				if strings.TrimSpace(col) == "" {
					e.add(key, "a column name cannot be empty")
					continue
				}
				c, ok := parseColumn(&e, key, t[col])
				if ok {
					s.Columns[strings.TrimSpace(col)] = c
				}
			}
		case "constants":
			t, ok := v.(map[string]any)
			if !ok {
				e.add(k, "want a table of target = value, got %s", tomlType(v))
				continue
			}
			s.Constants = make(map[string]string, len(t))
			for _, target := range sortedKeys(t) {
				key := keyPath("constants", target)
				val, ok := scalarString(t[target])
				if !ok {
					e.add(key, "want a string, got %s", tomlType(t[target]))
					continue
				}
				c, err := parseTarget(target)
				if err != nil {
					e.add(key, "%v", err)
					continue
				}
				switch c.To {
				case sink.FieldEmail, TargetIgnore:
					e.add(key, "%s cannot be a constant", c.To)
					continue
				case TargetTags:
					e.add(key, "tags for every row go in tags = [ … ], not in constants")
					continue
				}
				s.Constants[targetString(c)] = val
			}
		case "tags", "ignore":
			list, ok := stringList(v)
			if !ok {
				e.add(k, "want an array of strings, got %s", tomlType(v))
				continue
			}
			if k == "tags" {
				s.Tags = list
			} else {
				s.Ignore = list
			}
		case "auto":
			b, ok := v.(bool)
			if !ok {
				e.add(k, "want true or false, got %s", tomlType(v))
				continue
			}
			s.NoAuto = !b
		case "create_missing":
			b, ok := v.(bool)
			if !ok {
				e.add(k, "want true or false, got %s", tomlType(v))
				continue
			}
			s.CreateMissing = b
		case "duplicates":
			d, ok := v.(string)
			if !ok || !slices.Contains([]string{DuplicatesLast, DuplicatesFirst, DuplicatesReject}, d) {
				e.add(k, "want \"last\", \"first\" or \"reject\", got %s", tomlValue(v))
				continue
			}
			s.Duplicates = d
		case "on_invalid":
			o, ok := v.(string)
			if !ok || (o != OnInvalidReject && o != OnInvalidDrop) {
				e.add(k, "want \"reject\" or \"drop\", got %s", tomlValue(v))
				continue
			}
			s.OnInvalid = o
		case "where":
			w, ok := v.(string)
			if !ok {
				e.add(k, "want an expression in a string, got %s", tomlType(v))
				continue
			}
			if err := checkExpr(w); err != nil {
				e.add(k, "%v", err)
				continue
			}
			s.Where = w
		case "computed":
			t, ok := v.(map[string]any)
			if !ok {
				e.add(k, "want a table of target = expression, got %s", tomlType(v))
				continue
			}
			s.Computed = make(map[string]string, len(t))
			for _, target := range sortedKeys(t) {
				key := keyPath("computed", target)
				src, ok := t[target].(string)
				if !ok {
					e.add(key, "want an expression in a string, got %s", tomlType(t[target]))
					continue
				}
				c, err := parseTarget(target)
				if err != nil {
					e.add(key, "%v", err)
					continue
				}
				if !computableTarget(c.To) {
					e.add(key, "%s cannot be computed", c.To)
					continue
				}
				if err := checkExpr(src); err != nil {
					e.add(key, "%v", err)
					continue
				}
				s.Computed[targetString(c)] = src
			}
		case "date_format":
			f, ok := v.(string)
			if !ok || !slices.Contains(dateFormats, f) {
				e.add(k, "want %s, got %s", strings.Join(quoteAll(dateFormats), ", "), tomlValue(v))
				continue
			}
			s.DateFormat = f
		case "default_country":
			c, ok := v.(string)
			if !ok {
				e.add(k, "want a country calling code such as \"+47\", got %s", tomlType(v))
				continue
			}
			if _, ok := parseCountry(c); !ok {
				e.add(k, "%q is not a country calling code (such as \"+47\")", c)
				continue
			}
			s.DefaultCountry = c
		default:
			e.add(keyPath(k), "unknown key (want columns, auto, constants, tags, ignore, create_missing, duplicates, default_country, on_invalid, date_format, where or computed)")
		}
	}
	for _, col := range s.Ignore {
		if c, ok := s.Columns[col]; ok && c.To != TargetIgnore {
			e.add(keyPath("columns", col), "the column is also in ignore")
		}
	}
	return e.orNil()
}

func parseColumn(e *SpecError, key string, v any) (Column, bool) {
	switch v := v.(type) {
	case string:
		c, err := parseTarget(v)
		if err != nil {
			e.add(key, "%v", err)
			return Column{}, false
		}
		return c, true
	case map[string]any:
		var c Column
		ok := true
		for _, k := range sortedKeys(v) {
			if !slices.Contains([]string{"to", "custom", "datatype", "choices", "separator", "on_invalid", "split", "fallback", "date_format"}, k) {
				e.add(key+"."+k, "unknown key (want to, custom, datatype, choices, separator, on_invalid, split, fallback or date_format)")
				ok = false
			}
		}
		str := func(k string) (string, bool) {
			x, present := v[k]
			if !present {
				return "", false
			}
			s, isStr := x.(string)
			if !isStr {
				e.add(key+"."+k, "want a string, got %s", tomlType(x))
				ok = false
				return "", false
			}
			return s, true
		}
		if to, present := str("to"); present {
			t, err := parseTarget(to)
			if err != nil {
				e.add(key+".to", "%v", err)
				ok = false
			}
			c = t
		}
		if label, present := str("custom"); present {
			label = strings.TrimSpace(label)
			switch {
			case label == "":
				e.add(key+".custom", "a custom field label cannot be empty")
				ok = false
			case c.To != "" && c.To != TargetCustom:
				e.add(key+".custom", "custom cannot be combined with to = %q", c.To)
				ok = false
			case c.Custom != "" && c.Custom != label:
				e.add(key+".custom", "names custom field %q but to names %q", label, c.Custom)
				ok = false
			}
			c.To, c.Custom = TargetCustom, label
		}
		if dt, present := str("datatype"); present {
			if !slices.Contains(datatypes, dt) {
				e.add(key+".datatype", "unknown datatype %q (want one of %s)", dt, strings.Join(datatypes, ", "))
				ok = false
			}
			c.Datatype = dt
		}
		if sep, present := str("separator"); present {
			if sep == "" {
				e.add(key+".separator", "a separator cannot be empty")
				ok = false
			}
			c.Separator = sep
		}
		if o, present := str("on_invalid"); present {
			if o != OnInvalidReject && o != OnInvalidDrop {
				e.add(key+".on_invalid", "want \"reject\" or \"drop\", got %q", o)
				ok = false
			}
			c.OnInvalid = o
		}
		if df, present := str("date_format"); present {
			if !slices.Contains(dateFormats, df) {
				e.add(key+".date_format", "want %s", strings.Join(quoteAll(dateFormats), ", "))
				ok = false
			}
			c.DateFormat = df
		}
		if sp, present := str("split"); present {
			if !slices.Contains(splits, sp) {
				e.add(key+".split", "want %s", strings.Join(quoteAll(splits), ", "))
				ok = false
			}
			c.Split = sp
		}
		if x, present := v["fallback"]; present {
			list, isList := stringList(x)
			if !isList || len(list) == 0 || slices.Contains(list, "") {
				e.add(key+".fallback", "want an array of column names, got %s", tomlType(x))
				ok = false
			}
			c.Fallback = list
		}
		if x, present := v["choices"]; present {
			list, isList := stringList(x)
			if !isList {
				e.add(key+".choices", "want an array of strings, got %s", tomlType(x))
				ok = false
			}
			c.Choices = list
		}
		if !ok {
			return Column{}, false
		}
		if c.To == "" {
			e.add(key, "want to = \"<target>\" or custom = \"<label>\"")
			return Column{}, false
		}
		if c.To != TargetCustom && (c.Datatype != "" || c.Choices != nil) {
			e.add(key, "datatype and choices belong to custom fields only")
			return Column{}, false
		}
		if c.Separator != "" && c.To != TargetTags && !(c.To == TargetCustom && (c.Datatype == sink.DatatypeMultipleChoice || c.Datatype == "")) {
			e.add(key+".separator", "a separator belongs to tags and multiple_choice fields only")
			return Column{}, false
		}
		if c.DateFormat != "" && c.To != sink.FieldBirthday && c.To != TargetCustom {
			e.add(key+".date_format", "date_format belongs to birthday and custom date columns only")
			return Column{}, false
		}
		if c.Split != "" && c.To != TargetFullName {
			e.add(key+".split", "split belongs to fullname columns only")
			return Column{}, false
		}
		if c.Fallback != nil && c.To != sink.FieldEmail {
			e.add(key+".fallback", "fallback columns belong to the email column only")
			return Column{}, false
		}
		if c.OnInvalid == OnInvalidDrop && !optional(c.To) {
			e.add(key+".on_invalid", "%s is never optional: an invalid value always rejects the row", c.To)
			return Column{}, false
		}
		if c.Choices != nil && !isChoice(c.Datatype) {
			e.add(key+".choices", "choices belong to single_choice, multiple_choice and dropdown fields only")
			return Column{}, false
		}
		return c, true
	default:
		e.add(key, "want a target string or a table, got %s", tomlType(v))
		return Column{}, false
	}
}

// optional reports whether an invalid value of target may be dropped (on_invalid = "drop"):
// any target but the e-mail, the external id (a key), consents and statuses (a dropped
// "no" could make someone active).
func optional(target string) bool {
	switch target {
	case sink.FieldEmail, sink.FieldExternalID, TargetStatus, TargetStatusMobile, TargetIgnore:
		return false
	}
	return !slices.Contains(sink.ConsentFields, target)
}

func isChoice(datatype string) bool {
	return datatype == sink.DatatypeSingleChoice || datatype == sink.DatatypeMultipleChoice || datatype == sink.DatatypeDropdown
}

var errTargetHelp = "want a subscriber field (" + strings.Join(standardFields, ", ") +
	"), a consent field (" + strings.Join(sink.ConsentFields, ", ") +
	"), fullname, status, status_mobile, tags, ignore or custom:<label>"

// parseTarget reads a target as written in a mapping: a field name in any case, or
// "custom:<label>".
func parseTarget(s string) (Column, error) {
	t := strings.TrimSpace(s)
	if len(t) >= 7 && strings.EqualFold(t[:7], "custom:") {
		label := strings.TrimSpace(t[7:])
		if label == "" {
			return Column{}, errors.New("custom: needs a label (custom:<label>)")
		}
		return Column{To: TargetCustom, Custom: label}, nil
	}
	lower := strings.ToLower(t)
	if slices.Contains(standardFields, lower) {
		return Column{To: lower}, nil
	}
	switch lower {
	case TargetStatus, TargetStatusMobile, TargetTags, TargetIgnore, TargetFullName:
		return Column{To: lower}, nil
	}
	upper := strings.ToUpper(t)
	if slices.Contains(sink.ConsentFields, upper) {
		return Column{To: upper}, nil
	}
	return Column{}, fmt.Errorf("unknown target %q (%s)", s, errTargetHelp)
}

// targetString is the canonical text of a target, as parseTarget reads it.
func targetString(c Column) string {
	if c.To == TargetCustom {
		return "custom:" + c.Custom
	}
	return c.To
}

func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		if v {
			return "yes", true
		}
		return "no", true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	}
	return "", false
}

func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// keyPath writes a TOML key path, quoting the parts that are not bare keys.
func keyPath(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		if isBareKey(p) {
			b.WriteString(p)
		} else {
			b.WriteString(strconv.Quote(p))
		}
	}
	return b.String()
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	}
	return "a date or time"
}

func tomlValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return tomlType(v)
}
