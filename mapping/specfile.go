package mapping

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/subsync/subsync/sink"
)

// Targets are the targets a column can be given by name, in the order a person picks from:
// the subscriber fields, a full name, the consent fields, the statuses and tags. A custom
// field is "custom:<label>"; TargetIgnore leaves a column out on purpose.
func Targets() []string {
	out := slices.Clone(standardFields)
	out = append(out, TargetFullName)
	out = append(out, sink.ConsentFields...)
	return append(out, TargetStatus, TargetStatusMobile, TargetTags)
}

// ParseTarget reads a target as a mapping file writes it ("email", "custom:Kilde",
// "SAMTYKKEEPOST", "ignore").
func ParseTarget(s string) (Column, error) { return parseTarget(s) }

// TargetString is a column's target as a mapping file writes it.
func TargetString(c Column) string { return targetString(c) }

// TOML writes the spec as a mapping file: LoadSpec (and a sync's [syncs.mapping]) reads back
// the same spec. The header says where it came from (one line, may be empty).
func (s Spec) TOML(header string) []byte {
	var b strings.Builder
	if header != "" {
		b.WriteString("# " + strings.ReplaceAll(header, "\n", " ") + "\n")
	}
	if len(s.Ignore) > 0 {
		fmt.Fprintf(&b, "ignore = %s\n", tomlStrings(s.Ignore))
	}
	if len(s.Tags) > 0 {
		fmt.Fprintf(&b, "tags = %s\n", tomlStrings(s.Tags))
	}
	if s.NoAuto {
		b.WriteString("auto = false\n")
	}
	if s.CreateMissing {
		b.WriteString("create_missing = true\n")
	}
	if s.Duplicates != "" {
		fmt.Fprintf(&b, "duplicates = %s\n", tomlString(s.Duplicates))
	}
	if s.DefaultCountry != "" {
		fmt.Fprintf(&b, "default_country = %s\n", tomlString(s.DefaultCountry))
	}
	if s.OnInvalid != "" {
		fmt.Fprintf(&b, "on_invalid = %s\n", tomlString(s.OnInvalid))
	}
	if len(s.Columns) > 0 {
		b.WriteString("\n[columns]\n")
		for _, col := range sortedKeys(s.Columns) {
			fmt.Fprintf(&b, "%s = %s\n", tomlString(col), columnTOML(s.Columns[col]))
		}
	}
	if len(s.Constants) > 0 {
		b.WriteString("\n[constants]\n")
		for _, t := range sortedKeys(s.Constants) {
			fmt.Fprintf(&b, "%s = %s\n", tomlString(t), tomlString(s.Constants[t]))
		}
	}
	return []byte(b.String())
}

// columnTOML is a column's value: its target alone, or an inline table with its options.
func columnTOML(c Column) string {
	var opts []string
	add := func(k, v string) {
		if v != "" {
			opts = append(opts, k+" = "+tomlString(v))
		}
	}
	add("datatype", c.Datatype)
	if len(c.Choices) > 0 {
		opts = append(opts, "choices = "+tomlStrings(c.Choices))
	}
	add("separator", c.Separator)
	add("on_invalid", c.OnInvalid)
	add("split", c.Split)
	if len(c.Fallback) > 0 {
		opts = append(opts, "fallback = "+tomlStrings(c.Fallback))
	}
	if len(opts) == 0 {
		return tomlString(targetString(c))
	}
	return "{ to = " + tomlString(targetString(c)) + ", " + strings.Join(opts, ", ") + " }"
}

func tomlStrings(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// tomlString quotes s as a TOML basic string: backslash, quote and control characters
// escaped, the rest as it is (bytes that are not UTF-8 become U+FFFD).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, string(utf8.RuneError)) {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
