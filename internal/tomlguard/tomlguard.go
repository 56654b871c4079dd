// Package tomlguard refuses TOML input that could make the parser take the machine before it
// is parsed: a file over MaxBytes, arrays and inline tables nested deeper than MaxDepth, a
// key or table header of more than MaxKeyParts dotted parts, more than MaxKeys keys.
// BurntSushi/toml needs memory far out of proportion to such input (its issue #496: a 40 KB
// file of nested inline tables took 1.1 GB; a key of 20,000 dotted parts, 40 KB, took
// 6.6 GB, a table header of as many 908 MB), and a configuration or mapping file is written
// by people, so no limit is near anything real.
package tomlguard

import (
	"fmt"
	"io"
)

const (
	// MaxBytes is the largest configuration or mapping file read: 1 MiB.
	MaxBytes = 1 << 20
	// MaxDepth is how deep arrays and inline tables may nest.
	MaxDepth = 32
	// MaxKeyParts is how many dotted parts a key or a table header may have (a.b.c has three):
	// the parser's memory grows with the square of their number.
	MaxKeyParts = 32
	// MaxKeys is how many keys (and table headers) a file may hold.
	MaxKeys = 100_000
)

// Read reads r up to MaxBytes and refuses more.
func Read(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("the file is over %d bytes (1 MiB), the most subsync reads", MaxBytes)
	}
	return data, nil
}

// Check refuses data over MaxBytes, with brackets and braces nested deeper than MaxDepth,
// with a key (or a table header) of more than MaxKeyParts dotted parts, or with more than
// MaxKeys keys, outside strings and comments. The error names the line.
func Check(data []byte) error {
	if len(data) > MaxBytes {
		return fmt.Errorf("the file is %d bytes, over %d bytes (1 MiB), the most subsync reads", len(data), MaxBytes)
	}
	var stack []byte // the open brackets and braces
	line, keys := 1, 0
	keyNext := true // a key may start here: at a line's start, after '{' or ',' in an inline table
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n':
			line++
			keyNext = len(stack) == 0 || keyNext && stack[len(stack)-1] == '{'
			continue
		case c == ' ' || c == '\t' || c == '\r':
			continue
		case c == '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
			continue
		}
		if keyNext {
			if end, parts := keyAt(data, i, len(stack) == 0); parts > 0 {
				if parts > MaxKeyParts {
					return fmt.Errorf("line %d: a key or table name of %d dotted parts, over the %d subsync reads", line, parts, MaxKeyParts)
				}
				if keys++; keys > MaxKeys {
					return fmt.Errorf("line %d: over %d keys, the most subsync reads", line, MaxKeys)
				}
				keyNext = false
				i = end - 1
				continue
			}
		}
		keyNext = false
		switch c {
		case '"', '\'':
			end, lines := skipString(data, i)
			line += lines
			i = end
		case '[', '{':
			if stack = append(stack, c); len(stack) > MaxDepth {
				return fmt.Errorf("line %d: arrays and inline tables nested deeper than %d", line, MaxDepth)
			}
			keyNext = c == '{'
		case ']', '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			keyNext = len(stack) > 0 && stack[len(stack)-1] == '{'
		}
	}
	return nil
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c >= 0x80
}

// keyAt reads the key starting at data[i], or the table header's name when a header may
// start there (outside brackets: [a.b] or [[a.b]]); 0 parts when there is none.
func keyAt(data []byte, i int, header bool) (int, int) {
	if header && data[i] == '[' {
		i++
		if i < len(data) && data[i] == '[' {
			i++
		}
	}
	return scanKey(data, i)
}

// scanKey reads the dotted key starting at data[i] (bare or quoted parts, blanks around the
// dots) and returns the index just past it and its number of parts.
func scanKey(data []byte, i int) (int, int) {
	parts := 0
	for i < len(data) {
		for i < len(data) && (data[i] == ' ' || data[i] == '\t') {
			i++
		}
		switch {
		case i < len(data) && (data[i] == '"' || data[i] == '\''):
			end, lines := skipString(data, i)
			if lines > 0 {
				return i, parts
			}
			i = end + 1
		case i < len(data) && isBare(data[i]):
			for i < len(data) && isBare(data[i]) {
				i++
			}
		default:
			return i, parts
		}
		parts++
		j := i
		for j < len(data) && (data[j] == ' ' || data[j] == '\t') {
			j++
		}
		if j >= len(data) || data[j] != '.' {
			return i, parts
		}
		i = j + 1
	}
	return i, parts
}

// skipString returns the index of the last byte of the string opening at data[i] (or the end
// of data), and the newlines inside it.
func skipString(data []byte, i int) (int, int) {
	q := data[i]
	multi := i+2 < len(data) && data[i+1] == q && data[i+2] == q
	lines := 0
	j := i + 1
	if multi {
		j = i + 3
	}
	for ; j < len(data); j++ {
		switch c := data[j]; {
		case c == '\n':
			if !multi {
				return j - 1, lines
			}
			lines++
		case c == '\\' && q == '"':
			j++
		case c == q:
			if !multi {
				return j, lines
			}
			if j+2 < len(data) && data[j+1] == q && data[j+2] == q {
				return j + 2, lines
			}
		}
	}
	return len(data) - 1, lines
}
