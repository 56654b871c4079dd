package config

import (
	"bytes"
	"fmt"
	"os"

	"github.com/BurntSushi/toml"
)

// Mapping is a sync's mapping as written in the file: either the name of a mapping file
//
//	mapping = "crm.mapping.toml"
//
// or an inline table ([syncs.mapping] or mapping = { … }) in the mapping file's format.
// Left out, the source's columns are mapped automatically by their names.
type Mapping struct {
	// File is the mapping file, relative to the configuration's directory once loaded.
	File string
	// Inline is the inline table re-encoded as TOML; nil unless the mapping is inline.
	Inline []byte
}

// IsZero reports whether no mapping was given.
func (m Mapping) IsZero() bool { return m.File == "" && m.Inline == nil }

// UnmarshalTOML takes a string (a file name) or a table (an inline mapping).
func (m *Mapping) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		if v == "" {
			return fmt.Errorf("a mapping file name or an inline table, not an empty string")
		}
		m.File = v
		return nil
	case map[string]any:
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(v); err != nil {
			return fmt.Errorf("inline mapping: %w", err)
		}
		m.Inline = buf.Bytes()
		return nil
	}
	return fmt.Errorf("a mapping file name or an inline table, not a %T", v)
}

// MarshalText names the mapping for String: the file, or "inline".
func (m Mapping) MarshalText() ([]byte, error) {
	if m.Inline != nil {
		return []byte("(inline table)"), nil
	}
	return []byte(m.File), nil
}

func (m *Mapping) resolve(probs *problems, key string) {
	if m.File != "" {
		if _, err := os.Stat(m.File); err != nil {
			probs.add(key, m.File, "cannot read mapping file: %v", unwrapPath(err))
		}
	}
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
