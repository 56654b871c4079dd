package config

import (
	"bufio"
	"bytes"
	"reflect"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// knownKeys lists the keys a table at key path accepts, from the toml tags of Config; nil
// when the path leads nowhere known (a map's entries, a mapping table).
func knownKeys(key toml.Key) []string {
	t := reflect.TypeOf(Config{})
	for _, part := range key {
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem() // the part is an entry's name
			continue
		case reflect.Struct:
		default:
			return nil
		}
		f, ok := fieldByTag(t, part)
		if !ok {
			return nil
		}
		t = f.Type
	}
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		if name := tagName(t.Field(i)); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if tagName(t.Field(i)) == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func tagName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return tag
}

// suggest returns the known key closest to name (at most 2 edits away), or "".
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// keyLine finds the line of the file where key (the last part of a dotted key) is set or
// its table opened, or 0. It is a search, not a parse: the first line that fits wins.
func keyLine(data []byte, key toml.Key) int {
	last := regexp.QuoteMeta(key[len(key)-1])
	re := regexp.MustCompile(`^\s*(\[\[?\s*([\w.-]+\.)?` + last + `\s*\]\]?|"?` + last + `"?\s*=)`)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		if re.Match(sc.Bytes()) {
			return n
		}
	}
	return 0
}
