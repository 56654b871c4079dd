package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Size is a number of bytes written in the file as a string with a unit: "1GiB", "512MiB",
// "300KiB", "100MB", "4096B". A bare number is refused, as for a Duration.
type Size int64

var sizeUnits = []struct {
	suffix string
	bytes  int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// UnmarshalText parses a size.
func (s *Size) UnmarshalText(text []byte) error {
	v := strings.TrimSpace(string(text))
	for _, u := range sizeUnits {
		num, ok := strings.CutSuffix(v, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || n <= 0 || n*float64(u.bytes) > 1<<62 {
			break
		}
		*s = Size(n * float64(u.bytes))
		return nil
	}
	return fmt.Errorf("%q: not a size (write it like \"1GiB\", \"512MiB\" or \"100MB\")", v)
}

// MarshalText writes the size in the largest binary unit that divides it.
func (s Size) MarshalText() ([]byte, error) {
	for _, u := range []struct {
		suffix string
		bytes  int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if int64(s) >= u.bytes && int64(s)%u.bytes == 0 {
			return []byte(fmt.Sprintf("%d%s", int64(s)/u.bytes, u.suffix)), nil
		}
	}
	return []byte(fmt.Sprintf("%dB", int64(s))), nil
}
