package mapping

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// TestRejectCodeFromRowErrorCause: the reject code of a row the source could not read comes
// from the row error's cause.
func TestRejectCodeFromRowErrorCause(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "contacts.csv")
	require.NoError(t, os.WriteFile(path, []byte("email,name\na@x.no,J\xf8rn\nb@x.no,Ola,extra\n"), 0o600))
	r, err := sources.OpenCSV(context.Background(), path, sources.CSVOptions{Encoding: "utf-8", StrayLines: sources.StrayReject})
	require.NoError(t, err)
	defer r.Close()
	for _, want := range []string{CodeInvalidEncoding, CodeRowUnreadable} {
		rec, err := r.Next(context.Background())
		var rowErr *sources.RowError
		require.True(t, errors.As(err, &rowErr), "got %v, want a row error", err)
		rej := RejectFromRowError(rec, rowErr)
		require.Equal(t, want, rej.Code, "line %d: %s", rec.Line, rej.Message)
	}
}
