package sources_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// FuzzCSVRead opens any bytes as a CSV file, detecting everything or with some options set,
// and reads to the end. It must not panic or hang; a file that opens keeps the contract:
// ordinals count up by one, lines go up, a good record is as wide as the header.
func FuzzCSVRead(f *testing.F) {
	f.Add([]byte("email;name\r\na@x.no;\"Ærlig\r\nSøren\"\r\n;;\r\nb@x.no;B;C\r\n"), uint8(0))
	f.Add([]byte("a,b\n\"unterminated,x\nc,d\n\"e\"f,g\n"), uint8(1))
	f.Add([]byte("\xFF\xFEa\x00,\x00b\x00\n\x001\x00,\x002\x00"), uint8(2))
	f.Add([]byte("\xEF\xBB\xBF\"h1\"|h2\n\"\"\"q\"\"\"|x\n"), uint8(3))
	f.Add([]byte("h\r1\r\"2\r3\"\r"), uint8(4))
	f.Add([]byte("a\tb\n\x00\t\x00\n"), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		path, opts := fuzzCSV(t, data, mode, func(o *sources.CSVOptions) { o.Encoding = "utf-8" })
		r, err := sources.OpenCSV(context.Background(), path, opts)
		if err != nil {
			return
		}
		defer r.Close()
		require.NotEmpty(t, r.Header())
		lastLine, ordinal := 0, int64(0)
		for range len(data) + 2 { // every call consumes at least one line
			rec, err := r.Next(context.Background())
			if errors.Is(err, io.EOF) {
				require.Equal(t, ordinal, r.Progress().Rows)
				require.Equal(t, int64(len(data)), r.Progress().Bytes)
				return
			}
			var rowErr *sources.RowError
			if err != nil && !errors.As(err, &rowErr) {
				t.Fatalf("fatal error on a readable file: %v", err)
			}
			ordinal++
			require.Equal(t, ordinal, rec.Ordinal)
			require.Greater(t, rec.Line, lastLine)
			lastLine = rec.Line
			if err == nil {
				require.Len(t, rec.Values, len(r.Header()))
			}
		}
		t.Fatalf("no end after %d calls", len(data)+2)
	})
}

// fuzzCSV writes a fuzzer's data to a file and picks the options by mode: a record limit,
// and a delimiter, option2 or a header row.
func fuzzCSV(t *testing.T, data []byte, mode uint8, option2 func(*sources.CSVOptions)) (string, sources.CSVOptions) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fuzz.csv")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	opts := sources.CSVOptions{MaxRecordBytes: 64 + int(mode)*16}
	switch mode % 4 {
	case 1:
		opts.Delimiter = ";"
	case 2:
		option2(&opts)
	case 3:
		opts.HeaderRow = 1 + int(mode/4)%3
	}
	return path, opts
}

// FuzzCSVRoundTrip writes a table with encoding/csv and reads it back; what comes back is
// what encoding/csv's own reader reads from the same bytes, less the blank rows.
func FuzzCSVRoundTrip(f *testing.F) {
	f.Add("Ola|Nordmann|ola@x.no|Kari \"K\"|a,b;c|line\nbreak", uint8(3), byte(0), true)
	f.Add("  lead|trail  |\r\n|\r|||x", uint8(2), byte(1), false)
	f.Add("æøå|東京|📧|\t|", uint8(4), byte(2), true)
	f.Add("", uint8(1), byte(3), false)
	f.Fuzz(func(t *testing.T, cells string, width uint8, pick byte, crlf bool) {
		cols := 1 + int(width%6)
		delim := []rune{',', ';', '\t', '|'}[int(pick)%4]
		// Control characters become "?": a file dense in them is binary data to OpenCSV's
		// content sniffing (see looksBinary), not a CSV file to read.
		cells = strings.Map(func(r rune) rune {
			if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
				return '?'
			}
			return r
		}, strings.ReplaceAll(strings.ToValidUTF8(cells, "?"), "\x00", ""))
		values := strings.Split(cells, "|")
		header := make([]string, cols)
		for i := range header {
			header[i] = "c" + string(rune('0'+i))
		}
		var records [][]string
		for i := 0; i < len(values); i += cols {
			rec := make([]string, cols)
			copy(rec, values[i:min(len(values), i+cols)])
			records = append(records, rec)
		}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		w.Comma, w.UseCRLF = delim, crlf
		require.NoError(t, w.Write(header))
		require.NoError(t, w.WriteAll(records))

		oracle := csv.NewReader(bytes.NewReader(buf.Bytes()))
		oracle.Comma = delim
		want, err := oracle.ReadAll()
		require.NoError(t, err)
		var wantRows [][]string
		for _, rec := range want[1:] {
			blank := true
			for _, v := range rec {
				blank = blank && strings.TrimSpace(v) == ""
			}
			if !blank {
				wantRows = append(wantRows, rec)
			}
		}

		path := filepath.Join(t.TempDir(), "roundtrip.csv")
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
		r, err := sources.OpenCSV(context.Background(), path, sources.CSVOptions{Delimiter: string(delim), Encoding: "utf-8"})
		require.NoError(t, err)
		defer r.Close()
		require.Equal(t, header, r.Header())
		var got [][]string
		for {
			rec, err := r.Next(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, "file:\n%q", buf.String())
			got = append(got, rec.Values)
		}
		require.Equal(t, wantRows, got, "file:\n%q", buf.String())
	})
}
