package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration written in the file as a string such as "30s", "5m" or "2h".
// A bare number is refused: "timeout = 30" would be ambiguous.
type Duration time.Duration

// UnmarshalText parses a duration string.
func (d *Duration) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	if s == "" {
		*d = 0
		return nil
	}
	if strings.Trim(s, "0123456789.") == "" {
		return fmt.Errorf("%q: a duration needs a unit, e.g. \"%ss\" (write it as a string)", s, s)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q: %w", s, errNotDuration)
	}
	*d = Duration(v)
	return nil
}

var errNotDuration = errors.New(`not a duration (write it like "30s", "5m" or "2h")`)

// MarshalText writes the duration as a string ("1m30s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// String returns the duration in time.Duration's format.
func (d Duration) String() string { return time.Duration(d).String() }

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
