package sources

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// trimCell trims white space, including no-break spaces and stray byte order marks and
// zero-width spaces that spreadsheet programs leave in header cells.
func trimCell(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '\ufeff' || r == '\u200b'
	})
}

// normalizeHeader applies the Header rules of the package doc: cells trimmed, trailing
// empty cells dropped, an empty cell named "column N", a repeated name (compared
// case-insensitively) suffixed " (2)", " (3)". It fails when no name is left.
func normalizeHeader(cells []string) ([]string, error) {
	names := make([]string, len(cells))
	for i, c := range cells {
		names[i] = trimCell(c)
	}
	for len(names) > 0 && names[len(names)-1] == "" {
		names = names[:len(names)-1]
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: the header row has no column names", ErrNoHeader)
	}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		if n == "" {
			n = "column " + strconv.Itoa(i+1)
		}
		if seen[strings.ToLower(n)] {
			for k := 2; ; k++ {
				candidate := n + " (" + strconv.Itoa(k) + ")"
				if !seen[strings.ToLower(candidate)] {
					n = candidate
					break
				}
			}
		}
		seen[strings.ToLower(n)] = true
		names[i] = n
	}
	return names, nil
}

// allBlank reports whether every cell is empty or white space.
func allBlank(cells []string) bool {
	for _, c := range cells {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}
