package mapping

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/subsync/subsync/sink"
)

// FieldService is what mapping needs of the service to resolve custom fields by label.
// *sink.Client implements it.
type FieldService interface {
	CustomFields(ctx context.Context) ([]sink.CustomField, error)
	CreateCustomField(ctx context.Context, f sink.CustomField) (sink.CustomField, error)
}

// Fields are the service's custom fields as one run sees them: what [Resolve] fetched and
// created. The zero Fields knows no custom field.
type Fields struct {
	list    []sink.CustomField
	created []sink.CustomField
	planned []sink.CustomField // ResolveDryRun: fields that a real run would create
}

// NewFields returns Fields holding the given custom fields, as GET /custom_fields lists them.
func NewFields(list []sink.CustomField) Fields {
	return Fields{list: slices.Clone(list)}
}

// All returns every custom field known, created ones included.
func (f Fields) All() []sink.CustomField { return slices.Clone(f.list) }

// Created returns the custom fields Resolve created, for the run's log.
func (f Fields) Created() []sink.CustomField { return slices.Clone(f.created) }

// Planned returns the custom fields ResolveDryRun found missing: a run would create them.
func (f Fields) Planned() []sink.CustomField { return slices.Clone(f.planned) }

// PlannedSlot prefixes the stand-in slot name of a field ResolveDryRun would create; a preview
// shows the field under it, as the real slot is only known once the service assigns it.
const PlannedSlot = "(new) "

// lookup finds a custom field by label: the exact label, or else the one label equal to it
// ignoring case. It reports an error when several labels match.
func (f Fields) lookup(label string) (sink.CustomField, bool, error) {
	for _, c := range f.list {
		if c.Label == label {
			return c, true, nil
		}
	}
	var found []sink.CustomField
	for _, c := range f.list {
		if strings.EqualFold(strings.TrimSpace(c.Label), label) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		for _, c := range f.planned {
			if c.Label == label {
				return c, true, nil
			}
		}
		return sink.CustomField{}, false, nil
	case 1:
		return found[0], true, nil
	}
	return sink.CustomField{}, false, fmt.Errorf("custom field label %q matches %d fields (%s, %s); name it exactly", label, len(found), found[0].Value, found[1].Value)
}

// customWant is what a mapping asks of one custom field.
type customWant struct {
	label    string
	datatype string // "" when the mapping leaves it to the service
	choices  []string
	key      string // where the mapping first names it
}

// customWants collects the custom fields a spec names, in the order of the keys that name
// them, and checks that no two keys ask for different datatypes.
func customWants(spec Spec) ([]customWant, *SpecError) {
	var e SpecError
	var wants []customWant
	add := func(key string, c Column) {
		for i := range wants {
			w := &wants[i]
			if w.label != c.Custom {
				continue
			}
			if c.Datatype != "" && w.datatype != "" && c.Datatype != w.datatype {
				e.add(key, "custom field %q is %s here but %s at %s", c.Custom, c.Datatype, w.datatype, w.key)
			}
			w.datatype = cmp.Or(w.datatype, c.Datatype)
			if w.choices == nil {
				w.choices = c.Choices
			}
			return
		}
		wants = append(wants, customWant{label: c.Custom, datatype: c.Datatype, choices: c.Choices, key: key})
	}
	for _, col := range sortedKeys(spec.Columns) {
		if c := spec.Columns[col]; c.To == TargetCustom {
			add(keyPath("columns", col), c)
		}
	}
	for _, target := range sortedKeys(spec.Constants) {
		if c, err := parseTarget(target); err == nil && c.To == TargetCustom {
			add(keyPath("constants", target), c)
		}
	}
	return wants, &e
}

// Bounds of create_missing: a mapping never creates more custom fields than a person would
// make by hand, nor a label longer than one a person would read.
const (
	// MaxCreatedFields is how many custom fields one run may create.
	MaxCreatedFields = 20
	// MaxCreatedLabel is the longest label (in characters) create_missing creates.
	MaxCreatedLabel = 100
)

// Resolve looks up the custom fields the spec names by label, with one GET /custom_fields
// (none when the spec names no custom field). With CreateMissing it creates each field the
// service lacks, with the datatype and choices the mapping gives (string when it gives none):
// at most MaxCreatedFields, with labels of at most MaxCreatedLabel characters, or none at all
// and a *SpecError.
// A label the service lacks without CreateMissing is not an error here: [Compile] reports it
// with the other problems of the mapping.
func Resolve(ctx context.Context, fs FieldService, spec Spec) (Fields, error) {
	return resolve(ctx, fs, spec, false)
}

// ResolveDryRun is Resolve for a preview: it fetches the fields but creates nothing. A field a
// run would create is returned by [Fields.Planned] and maps to the stand-in slot
// PlannedSlot+label.
func ResolveDryRun(ctx context.Context, fs FieldService, spec Spec) (Fields, error) {
	return resolve(ctx, fs, spec, true)
}

func resolve(ctx context.Context, fs FieldService, spec Spec, dryRun bool) (Fields, error) {
	wants, e := customWants(spec)
	if err := e.orNil(); err != nil {
		return Fields{}, err
	}
	if len(wants) == 0 {
		return Fields{}, nil
	}
	list, err := fs.CustomFields(ctx)
	if err != nil {
		return Fields{}, fmt.Errorf("fetch custom fields: %w", err)
	}
	f := NewFields(list)
	if !spec.CreateMissing {
		return f, nil
	}
	var missing []customWant
	var se SpecError
	for _, w := range wants {
		_, ok, err := f.lookup(w.label)
		if err != nil || ok {
			continue // Compile reports an ambiguous label
		}
		if n := utf8.RuneCountInString(w.label); n > MaxCreatedLabel {
			se.add(w.key, "custom field label is %d characters: create_missing creates labels of at most %d", n, MaxCreatedLabel)
		}
		missing = append(missing, w)
	}
	if len(missing) > MaxCreatedFields {
		se.add("create_missing", "the service lacks %d of the custom fields the mapping names: create_missing creates at most %d in one run (create the others, or check the mapping)", len(missing), MaxCreatedFields)
	}
	if err := se.orNil(); err != nil {
		return Fields{}, err
	}
	for _, w := range missing {
		want := sink.CustomField{Label: w.label, Datatype: cmp.Or(w.datatype, sink.DatatypeString), Choices: w.choices}
		if dryRun {
			want.Value = PlannedSlot + w.label
			f.planned = append(f.planned, want)
			continue
		}
		created, err := fs.CreateCustomField(ctx, want)
		if err != nil {
			return Fields{}, fmt.Errorf("create custom field %q (%s): %w", w.label, want.Datatype, err)
		}
		if created.Datatype == "" {
			created.Datatype = want.Datatype
		}
		if created.Choices == nil {
			created.Choices = want.Choices
		}
		f.list = append(f.list, created)
		f.created = append(f.created, created)
	}
	return f, nil
}
