// Package tomlguard refuses TOML input that could make the parser take the machine before it
// is parsed: a file over MaxBytes, or arrays and inline tables nested deeper than MaxDepth.
// BurntSushi/toml needs memory far out of proportion to such input (its issue #496: a 40 KB
// file of nested inline tables took 1.1 GB), and a configuration or mapping file is written
// by people, so neither limit is near anything real.
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

// Check refuses data over MaxBytes or with brackets and braces nested deeper than MaxDepth,
// outside strings and comments. The error names the line.
func Check(data []byte) error {
	if len(data) > MaxBytes {
		return fmt.Errorf("the file is %d bytes, over %d bytes (1 MiB), the most subsync reads", len(data), MaxBytes)
	}
	depth, line := 0, 1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			end, lines := skipString(data, i)
			line += lines
			i = end
		case '[', '{':
			depth++
			if depth > MaxDepth {
				return fmt.Errorf("line %d: arrays and inline tables nested deeper than %d", line, MaxDepth)
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
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
