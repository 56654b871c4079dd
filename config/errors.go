package config

import (
	"fmt"
	"strconv"
	"strings"
)

// FieldError is one problem with one key of the configuration.
type FieldError struct {
	// Key is the TOML key as the user typed it, with array indexes: "syncs[1].schedule".
	// Empty for a syntax error that belongs to no key.
	Key string
	// Value is the offending value as written (quoted by Error), or "" when the key is
	// missing or the value is not worth repeating. Secrets never appear here.
	Value string
	// Line is the line of the file, when known.
	Line int
	// Reason says what is wrong.
	Reason string
}

// Error formats the problem as `key: "value": reason`.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	if e.Value != "" {
		b.WriteString(strconv.Quote(e.Value))
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Error is returned by [Load] and [Parse]: every problem found in one configuration.
// errors.As finds each *FieldError through Unwrap.
type Error struct {
	// Path is the configuration file; empty when no file was read.
	Path string
	// Problems are *FieldError values, in file order as far as known.
	Problems []error
}

// Error lists the problems one per line, each prefixed with the file (and line, when known),
// as compilers do.
func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		where := e.Path
		if where == "" {
			where = "configuration"
		}
		if fe, ok := p.(*FieldError); ok && fe.Line > 0 {
			where += ":" + strconv.Itoa(fe.Line)
		}
		b.WriteString(where)
		b.WriteString(": ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the problems.
func (e *Error) Unwrap() []error { return e.Problems }

// problems collects FieldErrors during validation.
type problems []error

func (p *problems) add(key, value, format string, args ...any) {
	*p = append(*p, &FieldError{Key: key, Value: value, Reason: fmt.Sprintf(format, args...)})
}
