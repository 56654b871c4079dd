package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// jsonFlag adds --json to a command that prints a listing or a result.
func jsonFlag(cmd *cobra.Command, v *bool) {
	cmd.Flags().BoolVar(v, "json", false, "print JSON instead of a table")
}

// printJSON writes v as indented JSON on stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// table writes aligned columns on stdout.
type table struct{ tw *tabwriter.Writer }

func (a *app) table(header ...string) *table { return newTable(a.stdout, header...) }

// newTable returns a table writing to w.
func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(toAny(header)...)
	}
	return t
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func (t *table) row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, cell(c))
	}
	fmt.Fprint(t.tw, "\n")
}

// cell keeps a value on one line of the table.
func cell(v any) string {
	s := fmt.Sprint(v)
	if s == "" {
		return "-"
	}
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

func (t *table) flush() error {
	if err := t.tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// fields prints name/value pairs, one per line, aligned.
func (a *app) fields(pairs ...any) error {
	t := a.table()
	for i := 0; i+1 < len(pairs); i += 2 {
		t.row(fmt.Sprint(pairs[i])+":", pairs[i+1])
	}
	return t.flush()
}

// parseID reads a positive numeric id argument.
func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("%s %q: want a positive number", what, s)
	}
	return id, nil
}

// errNotConfirmed ends a command whose confirmation was declined: nothing was done.
var errNotConfirmed = errors.New("not confirmed: nothing was changed")

// confirm asks "prompt [y/N]" on stderr and reads the answer from stdin. With yes it does
// not ask. Without a terminal on stdin it refuses (a usage error): a script must say --yes.
func (a *app) confirm(prompt string, yes bool) error {
	if yes {
		return nil
	}
	if !a.isTerminal(a.stdin) {
		return usagef("%s: refusing without confirmation (stdin is not a terminal); pass --yes", strings.TrimSuffix(prompt, "?"))
	}
	fmt.Fprintf(a.stderr, "%s [y/N] ", prompt)
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read confirmation: %w", err)
	}
	if line == "" && errors.Is(err, io.EOF) {
		fmt.Fprintln(a.stderr)
		return usagef("%s: no answer on stdin; pass --yes", strings.TrimSuffix(prompt, "?"))
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errNotConfirmed
}
