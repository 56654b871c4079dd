package sinktest

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Custom field datatypes.
var datatypes = []string{"string", "number", "date", "single_choice", "multiple_choice", "dropdown"}

// fieldJSON is the v2 Custom field representation. choices is present for choice datatypes.
type fieldJSON struct {
	ID       int64     `json:"id"`
	Label    string    `json:"label"`
	Value    string    `json:"value"`
	Datatype string    `json:"datatype"`
	Choices  *[]string `json:"choices,omitempty"`
}

func (f *customField) json() fieldJSON {
	out := fieldJSON{ID: f.id, Label: f.label, Value: "EXTRA" + strconv.Itoa(f.slot), Datatype: f.datatype}
	if f.hasChoices() {
		c := append([]string{}, f.choices...)
		out.Choices = &c
	}
	return out
}

type fieldBody struct {
	Label    *string   `json:"label"`
	Datatype *string   `json:"datatype"`
	Choices  *[]string `json:"choices"`
}

func (e *Emulator) getFields(w http.ResponseWriter, _ *http.Request, _ *reqInfo) {
	e.mu.Lock()
	fs := e.st.sortedFields()
	out := make([]fieldJSON, len(fs))
	for i, f := range fs {
		out[i] = f.json()
	}
	e.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) getField(w http.ResponseWriter, _ *http.Request, _ *reqInfo, id int64) {
	e.mu.Lock()
	f, ok := e.st.fields[id]
	var out fieldJSON
	if ok {
		out = f.json()
	}
	e.mu.Unlock()
	if !ok {
		notFound(w, nil, nil)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// validChoices checks a choices list: non-empty, distinct strings without commas (a
// multiple_choice value lists its choices separated by commas).
func validChoices(choices []string) string {
	seen := make(map[string]bool, len(choices))
	for _, c := range choices {
		if strings.TrimSpace(c) == "" || strings.Contains(c, ",") || c != strings.TrimSpace(c) {
			return "choices must be non-empty strings without commas or surrounding spaces"
		}
		if seen[c] {
			return "choices must be distinct"
		}
		seen[c] = true
	}
	return ""
}

// createField creates a custom field in the next EXTRA<n> slot; slots are never reused.
func (e *Emulator) createField(w http.ResponseWriter, r *http.Request, _ *reqInfo) {
	body, err := readBody(w, r)
	if err != nil {
		return
	}
	var b fieldBody
	if err := decodeObject(w, body, &b); err != nil {
		return
	}
	if b.Label == nil || strings.TrimSpace(*b.Label) == "" {
		write422(w, "label is required")
		return
	}
	if b.Datatype == nil || !slices.Contains(datatypes, *b.Datatype) {
		write422(w, "datatype must be one of %s", strings.Join(datatypes, ", "))
		return
	}
	f := customField{datatype: *b.Datatype}
	var choices []string
	if b.Choices != nil {
		if !f.hasChoices() {
			write422(w, "choices are only for single_choice, multiple_choice and dropdown fields")
			return
		}
		if reason := validChoices(*b.Choices); reason != "" {
			write422(w, "%s", reason)
			return
		}
		choices = *b.Choices
	}
	e.mu.Lock()
	out := e.st.createField(*b.Label, *b.Datatype, choices).json()
	e.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// updateField changes the label (and the choices of a choice field). A datatype other than
// the field's own is refused.
func (e *Emulator) updateField(w http.ResponseWriter, r *http.Request, _ *reqInfo, id int64) {
	e.mu.Lock()
	_, ok := e.st.fields[id]
	e.mu.Unlock()
	if !ok {
		notFound(w, nil, nil)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		return
	}
	var b fieldBody
	if err := decodeObject(w, body, &b); err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f, ok := e.st.fields[id]
	if !ok {
		notFound(w, nil, nil)
		return
	}
	switch {
	case b.Datatype != nil && *b.Datatype != f.datatype:
		write422(w, "datatype cannot be changed (field %s is %s)", "EXTRA"+strconv.Itoa(f.slot), f.datatype)
		return
	case b.Label == nil && b.Choices == nil:
		write422(w, "label is required")
		return
	case b.Label != nil && strings.TrimSpace(*b.Label) == "":
		write422(w, "label must not be empty")
		return
	case b.Choices != nil && !f.hasChoices():
		write422(w, "choices are only for single_choice, multiple_choice and dropdown fields")
		return
	}
	if b.Choices != nil {
		if reason := validChoices(*b.Choices); reason != "" {
			write422(w, "%s", reason)
			return
		}
		f.choices = *b.Choices
	}
	if b.Label != nil {
		f.label = *b.Label
	}
	e.st.fieldsChanged()
	writeJSON(w, http.StatusOK, f.json())
}

func (e *Emulator) deleteField(w http.ResponseWriter, _ *http.Request, _ *reqInfo, id int64) {
	e.mu.Lock()
	ok := e.st.deleteField(id)
	e.mu.Unlock()
	if !ok {
		notFound(w, nil, nil)
		return
	}
	writeOK(w)
}
