// Package rejectfile is the form of a rejects export that its writer (state, internal/export)
// and its reader (mapping, when the export is imported again) share: the columns it adds to
// the source's own, its kinds of row, and the quoting of a cell a spreadsheet would run as a
// formula. It imports nothing of subsync.
package rejectfile

// Prefix starts the names of the columns a rejects export adds to the source's own
// (Columns). Mapping ignores columns so named, so an export imports as it stands.
const Prefix = "subsync:"

// Columns are the columns a rejects export adds after the source's own: whether the row was
// rejected or sent with a warning, where it stood, the column at fault, the code and the
// reason.
var Columns = []string{Prefix + "kind", Prefix + "line", Prefix + "column", Prefix + "code", Prefix + "reason"}

// Kinds of row in a rejects export (its subsync:kind column).
const (
	Rejected = "rejected" // the row was not sent
	Warning  = "warning"  // the row was sent without the value(s) named
)

// Neutralise prefixes v with a single quote when a spreadsheet would read it as a formula (it
// starts with '=', '+', '-', '@', a tab or a carriage return).
func Neutralise(v string) string {
	if v == "" {
		return v
	}
	switch v[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + v
	}
	return v
}

// Restore undoes Neutralise: a value that starts with a single quote followed by what
// Neutralise quotes loses the quote. Mapping applies it to the cells of a rejects export being
// imported again.
func Restore(v string) string {
	if len(v) < 2 || v[0] != '\'' {
		return v
	}
	switch v[1] {
	case '=', '+', '-', '@', '\t', '\r':
		return v[1:]
	}
	return v
}
