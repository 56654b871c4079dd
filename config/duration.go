package config

import (
	"errors"
	"fmt"
	"strconv"
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

// Period is how long something is kept: a duration ("720h"), a number of days ("90d"), or
// "off": for ever (Forever).
type Period time.Duration

// Forever is the Period "off": kept for ever.
const Forever Period = -1

// UnmarshalText parses a period: "off", "<n>d" or a duration.
func (p *Period) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	if strings.EqualFold(s, Off) {
		*p = Forever
		return nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && strings.Trim(days, "0123456789") == "" {
		n, err := strconv.Atoi(days)
		if err != nil || n > 100*366 {
			return fmt.Errorf("%q: too many days", s)
		}
		*p = Period(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	var d Duration
	if err := d.UnmarshalText(text); err != nil {
		return fmt.Errorf("%w, a number of days (\"90d\") or \"off\"", err)
	}
	if d < 0 {
		return fmt.Errorf("%q: must not be negative", s)
	}
	*p = Period(d)
	return nil
}

// MarshalText writes the period as it is best read: "off", days ("90d") or a duration.
func (p Period) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// String returns "off", whole days as "90d", anything else in time.Duration's format.
func (p Period) String() string {
	switch d := time.Duration(p); {
	case p < 0:
		return Off
	case d > 0 && d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	default:
		return d.String()
	}
}
