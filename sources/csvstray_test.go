package sources_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// strayFile writes n UTF-8 rows with æøå, then one row in Windows-1252.
func strayFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mixed.csv")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "E-post,Fornavn")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "p%d@example.com,Bjørn Æsøy\n", i)
	}
	w.WriteString("last@example.com,J\xf8rgen \xc6rlig\n") // Windows-1252: Jørgen Ærlig
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return path
}

func readStray(t *testing.T, r *sources.CSVReader) (recs []sources.Record, rowErrs []error) {
	t.Helper()
	for {
		rec, err := r.Next(context.Background())
		if err == io.EOF {
			return recs, rowErrs
		}
		if _, ok := err.(*sources.RowError); ok {
			rowErrs = append(rowErrs, err)
			continue
		}
		require.NoError(t, err)
		recs = append(recs, rec)
	}
}

// TestCSVStrayLine: one Windows-1252 row at the end of a 100,000-row UTF-8 file leaves the
// file UTF-8; the stray row is decoded as Windows-1252 and reported as a warning with its
// line, or rejected with its line when so configured.
func TestCSVStrayLine(t *testing.T) {
	t.Parallel()
	const n = 100_000
	path := strayFile(t, n)

	r, err := sources.OpenCSV(context.Background(), path, sources.CSVOptions{})
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, sources.EncodingUTF8, r.Encoding())
	recs, rowErrs := readStray(t, r)
	require.Empty(t, rowErrs)
	require.Len(t, recs, n+1)
	require.Equal(t, "Bjørn Æsøy", recs[0].Values[1])
	require.Equal(t, "Bjørn Æsøy", recs[n-1].Values[1])
	require.Equal(t, "Jørgen Ærlig", recs[n].Values[1])
	count, warnings := r.Warnings()
	require.Equal(t, int64(1), count)
	require.Len(t, warnings, 1)
	require.Equal(t, n+2, int(warnings[0].Line))
	require.Equal(t, 2, warnings[0].Column)
	require.ErrorIs(t, &warnings[0], sources.ErrInvalidUTF8)
	require.Contains(t, warnings[0].Error(), "is not valid UTF-8: read as Windows-1252")

	r2, err := sources.OpenCSV(context.Background(), path, sources.CSVOptions{StrayLines: sources.StrayReject})
	require.NoError(t, err)
	defer r2.Close()
	recs, rowErrs = readStray(t, r2)
	require.Len(t, recs, n)
	require.Len(t, rowErrs, 1)
	require.EqualError(t, rowErrs[0], fmt.Sprintf("line %d column 2: is not valid UTF-8 (set the encoding of the file)", n+2))
}

// TestCSVMostlyWindows1252: a file where many lines are not UTF-8 is read as Windows-1252.
func TestCSVMostlyWindows1252(t *testing.T) {
	t.Parallel()
	path := strayFile(t, 10) // 1 stray line in 12: too many to be stray
	r, err := sources.OpenCSV(context.Background(), path, sources.CSVOptions{})
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, sources.EncodingWindows1252, r.Encoding())
	_, err = sources.OpenCSV(context.Background(), path, sources.CSVOptions{StrayLines: "ignore"})
	require.ErrorContains(t, err, `stray lines "ignore"`)
}
