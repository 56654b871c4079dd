package sources_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// TestRowErrorCauses: a row error carries its cause, as encoding/csv's ParseError does, so a
// caller decides by errors.Is, and the message still says what is wrong for a person.
func TestRowErrorCauses(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "causes.csv", []byte("email,name\n"+
		"a@x.no,Ola,extra\n"+ // line 2: a field too many
		"b@x.no,\"Kari\n"+ // line 3: a quote never closed … runs to the end
		""))
	r, err := sources.OpenCSV(context.Background(), path, sources.CSVOptions{})
	require.NoError(t, err)
	defer r.Close()
	want := []struct {
		line    int
		cause   error
		message string
	}{
		{2, sources.ErrFieldCount, "has 3 fields, the header has 2"},
		{3, sources.ErrQuote, "never closed"},
	}
	for _, w := range want {
		_, err := r.Next(context.Background())
		var rowErr *sources.RowError
		require.ErrorAs(t, err, &rowErr)
		require.Equal(t, w.line, rowErr.Line)
		require.ErrorIs(t, err, w.cause)
		require.Contains(t, err.Error(), w.message)
		require.Same(t, rowErr.Err, errors.Unwrap(rowErr))
	}
	_, err = r.Next(context.Background())
	require.ErrorIs(t, err, io.EOF)

	path = writeFile(t, "latin1.csv", []byte("email,name\nc@x.no,J\xf8rn\nd@x.no,Bin\x00ary\n"))
	r, err = sources.OpenCSV(context.Background(), path, sources.CSVOptions{Encoding: "utf-8", StrayLines: sources.StrayReject})
	require.NoError(t, err)
	defer r.Close()
	for _, cause := range []error{sources.ErrInvalidUTF8, sources.ErrBinary} {
		_, err := r.Next(context.Background())
		require.ErrorIs(t, err, cause)
	}
}
