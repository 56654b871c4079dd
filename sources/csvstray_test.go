package sources_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// TestCSVMostlyWindows1252: a file where many lines are not UTF-8 and none holds UTF-8 letters
// is read as Windows-1252.
func TestCSVMostlyWindows1252(t *testing.T) {
	t.Parallel()
	path := encodedFile(t, 0, 10) // 10 lines of 11 are not UTF-8: too many to be stray
	r, err := sources.OpenCSV(context.Background(), path, sources.CSVOptions{})
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, sources.EncodingWindows1252, r.Encoding())
	recs, _ := readStray(t, r)
	require.Equal(t, "Jørgen Ærlig", recs[0].Values[1])
	_, err = sources.OpenCSV(context.Background(), path, sources.CSVOptions{StrayLines: "ignore"})
	require.ErrorContains(t, err, `stray lines "ignore"`)
}

// encodedFile writes a header, utf8 UTF-8 rows with æøå, then cp1252 rows in Windows-1252.
func encodedFile(t *testing.T, utf8, cp1252 int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("E-post,Fornavn\n")
	for i := range utf8 {
		fmt.Fprintf(&b, "p%d@example.com,Bjørn Æsøy\n", i)
	}
	for i := range cp1252 {
		fmt.Fprintf(&b, "w%d@example.com,J\xf8rgen \xc6rlig\n", i) // Windows-1252: Jørgen Ærlig
	}
	path := filepath.Join(t.TempDir(), "mixed.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

// TestCSVPastTheStrayLimit: 151 Windows-1252 lines in a file of 100,000 UTF-8 lines are past
// the stray limit (100), but the file is UTF-8: it is read as UTF-8, every UTF-8 name intact,
// and each stray value is read as Windows-1252 with a warning naming its line, never the
// whole file switched to Windows-1252 (#35 point 9). With as many lines of each, past the
// limit both ways, the file cannot be told: opening it fails, saying how to set the encoding.
func TestCSVPastTheStrayLimit(t *testing.T) {
	t.Parallel()
	const n, stray = 99_849, 151
	path := encodedFile(t, n, stray)
	r, err := sources.OpenCSV(context.Background(), path, sources.CSVOptions{})
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, sources.EncodingUTF8, r.Encoding())
	recs, rowErrs := readStray(t, r)
	require.Empty(t, rowErrs)
	require.Len(t, recs, n+stray)
	for _, rec := range recs[:n] {
		require.Equal(t, "Bjørn Æsøy", rec.Values[1], "line %d", rec.Line)
	}
	for _, rec := range recs[n:] {
		require.Equal(t, "Jørgen Ærlig", rec.Values[1], "line %d", rec.Line)
	}
	count, warnings := r.Warnings()
	require.Equal(t, int64(stray), count)
	require.Equal(t, n+2, int(warnings[0].Line))
	require.Contains(t, warnings[0].Error(), "is not valid UTF-8: read as Windows-1252")

	_, err = sources.OpenCSV(context.Background(), encodedFile(t, 300, 400), sources.CSVOptions{})
	require.ErrorContains(t, err, "300 lines hold UTF-8 letters (the first is line 2) and 400 lines are not UTF-8 (the first is line 302)")
	require.ErrorContains(t, err, `set the file's encoding`)
}
