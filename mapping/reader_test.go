package mapping

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// csvReader is a small sources.Reader over CSV text for tests: it keeps the contract (lines,
// ordinals, a *RowError for a ragged row, io.EOF for ever) without depending on the sources
// package's readers, which this package does not need.
type csvReader struct {
	header []string
	r      *csv.Reader
	n      int64
	fail   error // returned after the last row instead of io.EOF, when set
	done   bool
	text   string
}

func newCSVReader(t testing.TB, text string) *csvReader {
	t.Helper()
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	require.NoError(t, err, "read CSV header")
	for i := range header {
		header[i] = strings.TrimSpace(header[i])
	}
	return &csvReader{header: header, r: r, text: text}
}

func (c *csvReader) Header() []string { return c.header }

func (c *csvReader) Next(ctx context.Context) (sources.Record, error) {
	if err := ctx.Err(); err != nil {
		return sources.Record{}, fmt.Errorf("next row: %w", err)
	}
	if c.done {
		if c.fail != nil {
			return sources.Record{}, c.fail
		}
		return sources.Record{}, io.EOF
	}
	values, err := c.r.Read()
	if errors.Is(err, io.EOF) {
		c.done = true
		return c.Next(ctx)
	}
	if err != nil {
		return sources.Record{}, err
	}
	line, _ := c.r.FieldPos(0)
	c.n++
	rec := sources.Record{Ordinal: c.n, Line: line, Values: values}
	if len(values) != len(c.header) {
		return rec, &sources.RowError{Line: line, Err: fmt.Errorf("the row has %d cells, the header %d", len(values), len(c.header))}
	}
	return rec, nil
}

func (c *csvReader) Progress() sources.Progress { return sources.Progress{Rows: c.n} }

func (c *csvReader) Close() error { return nil }

func TestCSVReaderHelper(t *testing.T) {
	t.Parallel()
	r := newCSVReader(t, "a,b\n1,2\n3\n\"x\ny\",4\n")
	require.Equal(t, []string{"a", "b"}, r.Header())
	rec, err := r.Next(t.Context())
	require.NoError(t, err)
	require.Equal(t, sources.Record{Ordinal: 1, Line: 2, Values: []string{"1", "2"}}, rec)
	rec, err = r.Next(t.Context())
	var rowErr *sources.RowError
	require.ErrorAs(t, err, &rowErr)
	require.Equal(t, 3, rec.Line)
	rec, err = r.Next(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(3), rec.Ordinal)
	require.Equal(t, 4, rec.Line)
	for range 2 {
		_, err = r.Next(t.Context())
		require.ErrorIs(t, err, io.EOF)
	}
}
