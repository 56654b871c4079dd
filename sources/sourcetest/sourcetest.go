// Package sourcetest is a conformance suite for [sources.Reader] implementations, in the
// manner of River's riverdrivertest.Exercise: every kind of source (each CSV encoding and
// delimiter, workbooks written two ways, each SQL database) is run through the same checks
// of the contract in the sources package doc.
//
// A kind takes part by giving a [Harness]: a function that stores a [Table] in the kind's
// own form (a file, a worksheet, a database table) and opens a reader over it.
package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// Table is what a harness stores: a header and data rows, as text. Rows may be shorter or
// longer than the header, or blank.
type Table struct {
	Header []string
	Rows   [][]string
}

// Harness lets a kind of source take part in the suite.
type Harness struct {
	// Open stores table and returns a reader over it. The suite closes the reader.
	Open func(t *testing.T, table Table) sources.Reader
	// Encodable reports whether the kind can store s (a Windows-1252 file cannot store
	// emoji). nil = any Unicode text.
	Encodable func(s string) bool
	// ShortRowIsError says whether a row with fewer cells than the header is a
	// *sources.RowError (CSV) or read with empty cells (a worksheet or a table, which cannot
	// tell a short row from empty cells).
	ShortRowIsError bool
	// FirstDataLine is the Record.Line of the first data row when the header is stored on
	// the first line or row: 2 for files and worksheets, 1 for a query result.
	FirstDataLine int
	// Sheet is the Record.Sheet the kind reports ("" except for workbooks).
	Sheet string
}

// Exercise runs every check of the suite against h, each as a parallel subtest.
func Exercise(t *testing.T, h Harness) {
	t.Helper()
	require.NotNil(t, h.Open, "Harness.Open")
	run := func(name string, check func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t)
		})
	}
	open := func(t *testing.T, table Table) sources.Reader {
		t.Helper()
		r := h.Open(t, table)
		require.NotNil(t, r)
		t.Cleanup(func() { _ = r.Close() })
		return r
	}

	run("RoundTrip", func(t *testing.T) {
		table := Table{Header: []string{"email", "name", "note", "phone"}, Rows: [][]string{
			{"ola@example.no", "Ola Nordmann", "plain", "+47 912 34 567"},
			{"kari@example.no", "Kåre Ærlig Øvrebø", "æøå ÆØÅ é ü ß € £", "0047"},
			{"q@example.com", `Say "hi"`, `"quoted" and 'single'`, "0150"},
			{"d@example.com", "a,b;c|d\te", "commas, semicolons; pipes| tabs\t", ""},
			{"s@example.com", "", "  padded  ", "1e5"},
			{"l@example.com", strings.Repeat("long ", 1000), "=1+2", "-"},
		}}
		if h.encodable("東京 📧") {
			table.Rows = append(table.Rows, []string{"u@example.jp", "東京 📧", "Ελληνικά", "١٢٣"})
		}
		multiline := []string{"m@example.com", "line one\nline two\n\nline four", "Storgata 1\nOslo", "x"}
		table.Rows = append(table.Rows, multiline) // last: its line breaks move no other row
		r := open(t, table)
		require.Equal(t, table.Header, r.Header())
		for i, want := range table.Rows {
			rec := h.next(t, r)
			require.Equal(t, want, rec.Values, "row %d", i+1)
			require.Equal(t, int64(i+1), rec.Ordinal, "row %d ordinal", i+1)
			require.Equal(t, h.FirstDataLine+i, rec.Line, "row %d line", i+1)
			require.Equal(t, h.Sheet, rec.Sheet, "row %d sheet", i+1)
		}
		requireEOF(t, r)
	})

	run("EndOfData", func(t *testing.T) {
		r := open(t, Table{Header: []string{"email"}, Rows: [][]string{{"a@example.com"}}})
		h.next(t, r)
		for range 3 {
			requireEOF(t, r)
		}
	})

	run("HeaderOnly", func(t *testing.T) {
		r := open(t, Table{Header: []string{"email", "name"}})
		require.Equal(t, []string{"email", "name"}, r.Header())
		requireEOF(t, r)
		require.Equal(t, int64(0), r.Progress().Rows)
	})

	run("HeaderTrimmedAndDeduplicated", func(t *testing.T) {
		r := open(t, Table{
			Header: []string{" Email ", "Name", "email", "\u00a0Phone\u00a0", "Name"},
			Rows:   [][]string{{"a@example.com", "A", "b@example.com", "1", "B"}},
		})
		require.Equal(t, []string{"Email", "Name", "email (2)", "Phone", "Name (2)"}, r.Header())
		require.Equal(t, []string{"a@example.com", "A", "b@example.com", "1", "B"}, h.next(t, r).Values)
	})

	run("MissingHeaderCells", func(t *testing.T) {
		r := open(t, Table{
			Header: []string{"email", " ", "name", " ", " "},
			Rows:   [][]string{{"a@example.com", "x", "A", "", ""}, {"b@example.com", "", "B"}},
		})
		require.Equal(t, []string{"email", "column 2", "name"}, r.Header(), "a blank cell is named, trailing blank cells are dropped")
		require.Equal(t, []string{"a@example.com", "x", "A"}, h.next(t, r).Values)
		require.Equal(t, []string{"b@example.com", "", "B"}, h.next(t, r).Values)
		requireEOF(t, r)
	})

	run("BlankRowsSkipped", func(t *testing.T) {
		r := open(t, Table{Header: []string{"email", "name"}, Rows: [][]string{
			{"", ""},
			{"a@example.com", "A"},
			{"", ""},
			{" ", "  "},
			{"b@example.com", "B"},
			{"", ""},
		}})
		a := h.next(t, r)
		require.Equal(t, []string{"a@example.com", "A"}, a.Values)
		require.Equal(t, int64(1), a.Ordinal)
		require.Equal(t, h.FirstDataLine+1, a.Line)
		b := h.next(t, r)
		require.Equal(t, []string{"b@example.com", "B"}, b.Values)
		require.Equal(t, int64(2), b.Ordinal, "blank rows get no ordinal")
		require.Equal(t, h.FirstDataLine+4, b.Line, "blank rows still count as lines")
		requireEOF(t, r)
	})

	run("ShortRow", func(t *testing.T) {
		r := open(t, Table{Header: []string{"email", "name", "phone"}, Rows: [][]string{
			{"a@example.com", "A"},
			{"b@example.com", "B", "2"},
		}})
		rec, err := r.Next(context.Background())
		if h.ShortRowIsError {
			var rowErr *sources.RowError
			require.ErrorAs(t, err, &rowErr)
			require.Equal(t, h.FirstDataLine, rowErr.Line)
			require.Equal(t, h.FirstDataLine, rec.Line)
			require.Equal(t, int64(1), rec.Ordinal)
			require.Equal(t, 3, rowErr.Column, "the first missing column")
		} else {
			require.NoError(t, err)
			require.Equal(t, []string{"a@example.com", "A", ""}, rec.Values)
		}
		next := h.next(t, r)
		require.Equal(t, []string{"b@example.com", "B", "2"}, next.Values, "the rest flows")
		require.Equal(t, int64(2), next.Ordinal)
		requireEOF(t, r)
	})

	run("ValueWithoutHeader", func(t *testing.T) {
		r := open(t, Table{Header: []string{"email", "name"}, Rows: [][]string{
			{"a@example.com", "A", "stray"},
			{"b@example.com", "B", ""},
			{"c@example.com", "C"},
		}})
		rec, err := r.Next(context.Background())
		var rowErr *sources.RowError
		require.ErrorAs(t, err, &rowErr)
		require.Equal(t, h.FirstDataLine, rowErr.Line)
		require.Equal(t, 3, rowErr.Column)
		require.Equal(t, h.Sheet, rowErr.Sheet)
		require.Equal(t, int64(1), rec.Ordinal)
		require.Contains(t, rec.Values, "a@example.com", "a row error keeps what was read")
		require.Equal(t, []string{"b@example.com", "B"}, h.next(t, r).Values, "an empty extra cell is no error")
		require.Equal(t, []string{"c@example.com", "C"}, h.next(t, r).Values)
		requireEOF(t, r)
	})

	run("ValuesNotReused", func(t *testing.T) {
		r := open(t, Table{Header: []string{"email"}, Rows: [][]string{{"a@example.com"}, {"b@example.com"}}})
		first := h.next(t, r)
		kept := append([]string(nil), first.Values...)
		h.next(t, r)
		require.Equal(t, kept, first.Values)
	})

	run("ManyRows", func(t *testing.T) {
		const n = 3000
		table := Table{Header: []string{"email", "n"}}
		for i := range n {
			table.Rows = append(table.Rows, []string{fmt.Sprintf("user%d@example.com", i), fmt.Sprint(i)})
		}
		r := open(t, table)
		for i := range n {
			rec := h.next(t, r)
			require.Equal(t, table.Rows[i], rec.Values)
			require.Equal(t, int64(i+1), rec.Ordinal)
		}
		requireEOF(t, r)
		p := r.Progress()
		require.Equal(t, int64(n), p.Rows)
		if p.TotalBytes > 0 {
			require.Equal(t, p.TotalBytes, p.Bytes, "all bytes consumed at the end")
		}
		if p.TotalRows > 0 {
			require.GreaterOrEqual(t, p.TotalRows, p.Rows)
		}
	})

	run("CloseTwice", func(t *testing.T) {
		r := h.Open(t, Table{Header: []string{"email"}, Rows: [][]string{{"a@example.com"}, {"b@example.com"}}})
		h.next(t, r)
		require.NoError(t, r.Close())
		require.NoError(t, r.Close())
		_, err := r.Next(context.Background())
		require.ErrorIs(t, err, sources.ErrClosed)
	})

	run("CancelledContext", func(t *testing.T) {
		r := open(t, Table{Header: []string{"email"}, Rows: [][]string{{"a@example.com"}, {"b@example.com"}}})
		h.next(t, r)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := r.Next(ctx)
		require.ErrorIs(t, err, context.Canceled)
		_, err = r.Next(context.Background())
		require.Error(t, err, "a fatal error stays")
		require.NotErrorIs(t, err, io.EOF)
	})
}

func (h Harness) encodable(s string) bool { return h.Encodable == nil || h.Encodable(s) }

// next reads a record that must not be an error.
func (h Harness) next(t *testing.T, r sources.Reader) sources.Record {
	t.Helper()
	rec, err := r.Next(context.Background())
	require.NoError(t, err)
	return rec
}

func requireEOF(t *testing.T, r sources.Reader) {
	t.Helper()
	rec, err := r.Next(context.Background())
	require.True(t, errors.Is(err, io.EOF), "got %v (%+v), want io.EOF", err, rec)
}
