// Package check is the form of a configuration problem: the field it is about, the value
// and the reason. The packages that own a setting validate it (sink.Config.Validate,
// sources.Config.Validate, jobs.Config.Validate) and report a *FieldError naming the Go
// field ("Syncs[1].Schedule"); the config package turns that name into the TOML key the
// user typed ("syncs[1].schedule"), in one place.
package check

import (
	"errors"
	"fmt"
	"strconv"
)

// FieldError is one problem with one field of a configuration.
type FieldError struct {
	// Field is the path of the field from the validated struct: "Timeout",
	// "Syncs[1].Source.Driver", "Sources[crm].DSN".
	Field string
	// Value is the offending value as written, or "" when the field is missing or the value
	// is not worth repeating. Secrets never appear here.
	Value string
	// Reason says what is wrong.
	Reason string
}

// Error formats the problem as `Field: "value": reason`.
func (e *FieldError) Error() string {
	if e.Value == "" {
		return e.Field + ": " + e.Reason
	}
	return e.Field + ": " + strconv.Quote(e.Value) + ": " + e.Reason
}

// Problems collects the problems of one validation.
type Problems []error

// Add records a problem of field.
func (p *Problems) Add(field, value, format string, args ...any) {
	*p = append(*p, &FieldError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)})
}

// Nest records the problems of err, a nested validation, with prefix+"." before each field
// ("Sink" and "Timeout" make "Sink.Timeout"). An error that is no *FieldError is kept as is.
func (p *Problems) Nest(prefix string, err error) {
	for _, e := range Fields(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			cp := *fe
			cp.Field = prefix + "." + fe.Field
			e = &cp
		}
		*p = append(*p, e)
	}
}

// Err returns the problems joined (errors.Join), or nil when there is none.
func (p Problems) Err() error { return errors.Join(p...) }

// Fields returns the problems err holds: the errors it joins, or err itself.
func Fields(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
