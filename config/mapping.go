package config

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/subsync/subsync/mapping"
)

// Mapping is a sync's mapping as written in the file: either the name of a mapping file
//
//	mapping = "crm.mapping.toml"
//
// or an inline table ([syncs.mapping], or mapping = { … }) in the mapping file's format
// (see package mapping). Left out, the source's columns are mapped automatically by their
// names. [Load] reads and checks the mapping either way.
type Mapping struct {
	// File is the mapping file, relative to the configuration's directory once loaded;
	// empty for an inline mapping.
	File string `json:"file,omitempty"`
	// Spec is the mapping, parsed; nil when none is given (automatic mapping).
	Spec *mapping.Spec `json:"spec,omitempty"`

	inline map[string]any // the inline table, until resolve parses it
}

// IsZero reports whether no mapping was given.
func (m Mapping) IsZero() bool { return m.File == "" && m.Spec == nil && m.inline == nil }

// UnmarshalTOML takes a string (a file name) or a table (an inline mapping).
func (m *Mapping) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		if v == "" {
			return errors.New("want a mapping file name or an inline table, not an empty string")
		}
		m.File = v
		return nil
	case map[string]any:
		m.inline = v
		return nil
	}
	return fmt.Errorf("want a mapping file name or an inline table, not a %T", v)
}

// MarshalText names the mapping when the configuration is printed: the file, or "(inline)".
func (m Mapping) MarshalText() ([]byte, error) {
	switch {
	case m.File != "":
		return []byte(m.File), nil
	case m.Spec != nil:
		return []byte("(inline)"), nil
	}
	return []byte("(automatic)"), nil
}

// resolve parses the inline table or reads the file, reporting the mapping's problems under
// key.
func (m *Mapping) resolve(probs *problems, key string) {
	switch {
	case m.inline != nil:
		var spec mapping.Spec
		err := spec.UnmarshalTOML(m.inline)
		m.inline = nil
		if err != nil {
			addMappingProblems(probs, key, "", err)
			return
		}
		m.Spec = &spec
	case m.File != "":
		spec, err := mapping.LoadSpec(m.File)
		if err != nil {
			addMappingProblems(probs, key, m.File, err)
			return
		}
		m.Spec = &spec
	}
}

func addMappingProblems(probs *problems, key, file string, err error) {
	var se *mapping.SpecError
	if !errors.As(err, &se) {
		probs.add(key, file, "%v", unwrapPath(err))
		return
	}
	for _, p := range se.Problems {
		switch {
		case file != "" && p.Key != "":
			probs.add(key, file, "%s: %s", p.Key, p.Message)
		case file != "":
			probs.add(key, file, "%s", p.Message)
		case p.Key != "":
			probs.add(key+"."+p.Key, "", "%s", p.Message)
		default:
			probs.add(key, "", "%s", p.Message)
		}
	}
}

// unwrapPath turns an *fs.PathError into "cannot read: <reason>": the key and value already
// name the file.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot read: %w", pe.Err)
	}
	return err
}
