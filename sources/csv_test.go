package sources_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/charmap"

	"github.com/subsync/subsync/sources"
)

// row is what a test expects from one call of Next: values, or a row error at a line.
type row struct {
	line   int
	values []string
	errHas string // a *RowError whose message contains this
}

// readAll reads r to the end, turning each result into a row.
func readAll(t *testing.T, r sources.Reader) []row {
	t.Helper()
	var got []row
	for {
		rec, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return got
		}
		var rowErr *sources.RowError
		if errors.As(err, &rowErr) {
			require.Equal(t, rec.Line, rowErr.Line, "a row error's line is the record's")
			got = append(got, row{line: rowErr.Line, errHas: rowErr.Error()})
			continue
		}
		require.NoError(t, err)
		got = append(got, row{line: rec.Line, values: rec.Values})
	}
}

// requireRows compares rows, matching a row error by substring.
func requireRows(t *testing.T, want, got []row) {
	t.Helper()
	require.Len(t, got, len(want), "got %+v", got)
	for i := range want {
		require.Equal(t, want[i].line, got[i].line, "row %d line (got %+v)", i+1, got[i])
		if want[i].errHas != "" {
			require.Contains(t, got[i].errHas, want[i].errHas, "row %d", i+1)
			continue
		}
		require.Empty(t, got[i].errHas, "row %d", i+1)
		require.Equal(t, want[i].values, got[i].values, "row %d", i+1)
	}
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

func win1252(t *testing.T, s string) []byte {
	t.Helper()
	b, err := charmap.Windows1252.NewEncoder().Bytes([]byte(s))
	require.NoError(t, err)
	return b
}

func openCSV(t *testing.T, path string, opts sources.CSVOptions) *sources.CSVReader {
	t.Helper()
	r, err := sources.OpenCSV(context.Background(), path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// A CSV file saved by Excel on a Norwegian Windows: Windows-1252, semicolons, CRLF, a
// decimal comma, an empty row written as semicolons.
func TestCSVNorwegianExcelExport(t *testing.T) {
	t.Parallel()
	text := "Fornavn;Etternavn;E-post;Postnummer;Poststed;Beløp\r\n" +
		"Ærlig;Søren;soren@example.no;0150;Tromsø;1 234,50\r\n" +
		";;;;;\r\n" +
		"Åse;Øvrebø;\"ase@example.no\";9008;\"Bodø; Nordland\";12,5\r\n"
	r := openCSV(t, writeFile(t, "kunder.csv", win1252(t, text)), sources.CSVOptions{})
	require.Equal(t, sources.EncodingWindows1252, r.Encoding())
	require.Equal(t, ';', r.Delimiter())
	require.False(t, r.BOM())
	require.Equal(t, []string{"Fornavn", "Etternavn", "E-post", "Postnummer", "Poststed", "Beløp"}, r.Header())
	requireRows(t, []row{
		{line: 2, values: []string{"Ærlig", "Søren", "soren@example.no", "0150", "Tromsø", "1 234,50"}},
		{line: 4, values: []string{"Åse", "Øvrebø", "ase@example.no", "9008", "Bodø; Nordland", "12,5"}},
	}, readAll(t, r))
}

// Encoding detection looks at the whole file, not just the first block: a Windows-1252
// character far down is found.
func TestCSVWindows1252FarIntoTheFile(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("email,city\n")
	for range 20000 {
		b.WriteString("someone@example.com,Oslo\n")
	}
	b.WriteString("last@example.com,Tromsø\n")
	r := openCSV(t, writeFile(t, "late.csv", win1252(t, b.String())), sources.CSVOptions{})
	// ASCII (so UTF-8) but for one stray line: UTF-8, the stray line decoded as Windows-1252
	// with a warning.
	require.Equal(t, sources.EncodingUTF8, r.Encoding())
	rows := readAll(t, r)
	require.Len(t, rows, 20001)
	require.Equal(t, []string{"last@example.com", "Tromsø"}, rows[20000].values)
	n, warnings := r.Warnings()
	require.Equal(t, int64(1), n)
	require.Equal(t, 20002, warnings[0].Line)
}

// The header of a Google Contacts export (UTF-8, comma), with a multi-line address.
func TestCSVGoogleContactsExport(t *testing.T) {
	t.Parallel()
	header := "First Name,Middle Name,Last Name,Phonetic First Name,Phonetic Middle Name,Phonetic Last Name," +
		"Name Prefix,Name Suffix,Nickname,File As,Organization Name,Organization Title,Organization Department," +
		"Birthday,Notes,Photo,Labels,E-mail 1 - Label,E-mail 1 - Value,E-mail 2 - Label,E-mail 2 - Value," +
		"Phone 1 - Label,Phone 1 - Value,Address 1 - Label,Address 1 - Formatted,Address 1 - Street," +
		"Address 1 - City,Address 1 - PO Box,Address 1 - Region,Address 1 - Postal Code,Address 1 - Country," +
		"Address 1 - Extended Address"
	line := `Kari,,Nordmann,,,,,,,,Eksempel AS,,,1985-03-09,"Met at ""Oslo Innovation Week""",,* myContacts ::: Kunder,` +
		`* Home,kari@example.no,Work,kari@eksempel.no,Mobile,+47 912 34 567,Home,"Storgata 1` + "\n" +
		`0150 Oslo` + "\n" + `Norway",Storgata 1,Oslo,,,0150,Norway,` + "\n"
	r := openCSV(t, writeFile(t, "contacts.csv", []byte(header+"\n"+line)), sources.CSVOptions{})
	require.Equal(t, ',', r.Delimiter())
	require.Equal(t, strings.Split(header, ","), r.Header())
	rows := readAll(t, r)
	require.Len(t, rows, 1)
	got := map[string]string{}
	for i, h := range r.Header() {
		got[h] = rows[0].values[i]
	}
	require.Equal(t, "kari@example.no", got["E-mail 1 - Value"])
	require.Equal(t, "+47 912 34 567", got["Phone 1 - Value"])
	require.Equal(t, "Storgata 1\n0150 Oslo\nNorway", got["Address 1 - Formatted"])
	require.Equal(t, `Met at "Oslo Innovation Week"`, got["Notes"])
	require.Equal(t, "0150", got["Address 1 - Postal Code"])
}

// The header of a Mailchimp audience export (UTF-8 with a BOM, comma).
func TestCSVMailchimpExport(t *testing.T) {
	t.Parallel()
	header := "Email Address,First Name,Last Name,Address,Phone Number,Birthday,MEMBER_RATING,OPTIN_TIME," +
		"OPTIN_IP,CONFIRM_TIME,CONFIRM_IP,LATITUDE,LONGITUDE,GMTOFF,DSTOFF,TIMEZONE,CC,REGION,LAST_CHANGED," +
		"LEID,EUID,NOTES,TAGS"
	line := `ola@example.no,Ola,Nordmann,"Storgata 1  Oslo    0150  NO",+4791234567,05/17,2,"2023-01-02 10:11:12",,` +
		`"2023-01-02 10:12:00",203.0.113.7,59.91,10.75,1,2,Europe/Oslo,NO,,"2024-02-01 08:00:00",123456789,a1b2c3d4e5,,"""VIP"",""Oslo"""` + "\r\n"
	r := openCSV(t, writeFile(t, "members_export.csv", []byte("\xEF\xBB\xBF"+header+"\r\n"+line)), sources.CSVOptions{})
	require.True(t, r.BOM())
	require.Equal(t, sources.EncodingUTF8, r.Encoding())
	require.Equal(t, strings.Split(header, ","), r.Header(), "no byte order mark in the first column name")
	rows := readAll(t, r)
	require.Len(t, rows, 1)
	require.Equal(t, "ola@example.no", rows[0].values[0])
	require.Equal(t, "Storgata 1  Oslo    0150  NO", rows[0].values[3])
	require.Equal(t, `"VIP","Oslo"`, rows[0].values[22])
}

// Broken rows are row errors at the line where they start; the rest of the file flows.
func TestCSVBrokenRows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want []row
	}{
		{
			name: "ragged rows",
			text: "email,name,phone\na@x.no,A,1\nb@x.no,B\nc@x.no,C,3,extra\nd@x.no,D,4,,\ne@x.no,E,5\n",
			want: []row{
				{line: 2, values: []string{"a@x.no", "A", "1"}},
				{line: 3, errHas: "line 3 column 3: has 2 fields, the header has 3"},
				{line: 4, errHas: "line 4 column 4: has 4 fields, the header has 3"},
				{line: 5, values: []string{"d@x.no", "D", "4"}},
				{line: 6, values: []string{"e@x.no", "E", "5"}},
			},
		},
		{
			name: "unterminated quote in the middle",
			text: "email,name\na@x.no,A\nb@x.no,\"B\nc@x.no,C\nd@x.no,D\n",
			want: []row{
				{line: 2, values: []string{"a@x.no", "A"}},
				{line: 3, errHas: "never closed (unterminated quote)"},
				{line: 4, values: []string{"c@x.no", "C"}},
				{line: 5, values: []string{"d@x.no", "D"}},
			},
		},
		{
			name: "unterminated quote closed by a later quote",
			text: "email,name\na@x.no,\"A\nb@x.no,\"B\"\nc@x.no,C\n",
			want: []row{
				{line: 2, errHas: "after the closing quote of the quoted field starting on line 2"},
				{line: 3, values: []string{"b@x.no", "B"}},
				{line: 4, values: []string{"c@x.no", "C"}},
			},
		},
		{
			name: "unterminated quote on the last line",
			text: "email,name\na@x.no,A\nb@x.no,\"B",
			want: []row{
				{line: 2, values: []string{"a@x.no", "A"}},
				{line: 3, errHas: "unterminated quote"},
			},
		},
		{
			name: "text after a closing quote",
			text: "email,name\na@x.no,\"A\"x\nb@x.no,B\n",
			want: []row{
				{line: 2, errHas: `unexpected 'x' after the closing quote`},
				{line: 3, values: []string{"b@x.no", "B"}},
			},
		},
		{
			name: "quotes inside an unquoted field are kept",
			text: "email,name\na@x.no,Company \"AS\"\n",
			want: []row{{line: 2, values: []string{"a@x.no", `Company "AS"`}}},
		},
		{
			name: "quoted fields with line breaks, doubled quotes, CRLF and spaces",
			text: "email,note\r\na@x.no, \"one\r\ntwo \"\"2\"\"\" \r\nb@x.no,\"\"\r\n\r\n\r\nc@x.no,\"x,y\"\r\n",
			want: []row{
				{line: 2, values: []string{"a@x.no", "one\ntwo \"2\""}},
				{line: 4, values: []string{"b@x.no", ""}},
				{line: 7, values: []string{"c@x.no", "x,y"}},
			},
		},
		{
			name: "a NUL byte",
			text: "email,name\na@x.no,A\x00\nb@x.no,B\n",
			want: []row{
				{line: 2, errHas: "column 2: contains a NUL byte"},
				{line: 3, values: []string{"b@x.no", "B"}},
			},
		},
		{
			name: "no line break at the end",
			text: "email,name\na@x.no,A",
			want: []row{{line: 2, values: []string{"a@x.no", "A"}}},
		},
		{
			name: "old Mac line ends",
			text: "email,name\ra@x.no,A\r\rb@x.no,\"B\rC\"\r",
			want: []row{
				{line: 2, values: []string{"a@x.no", "A"}},
				{line: 4, values: []string{"b@x.no", "B\nC"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := openCSV(t, writeFile(t, "broken.csv", []byte(tt.text)), sources.CSVOptions{Delimiter: ","})
			requireRows(t, tt.want, readAll(t, r))
		})
	}
}

func TestCSVLongLines(t *testing.T) {
	t.Parallel()
	text := "email,note\na@x.no," + strings.Repeat("x", 5000) + "\nb@x.no,\"" + strings.Repeat("y\n", 3000) + "\"\nc@x.no,C\n"
	r := openCSV(t, writeFile(t, "long.csv", []byte(text)), sources.CSVOptions{MaxRecordBytes: 4096})
	requireRows(t, []row{
		{line: 2, errHas: "longer than 4096 bytes"},
		{line: 3, errHas: "runs past 4096 bytes"},
		// The quoted field is given up; its lines are read again as rows.
	}, readAll(t, r)[:2])
}

func TestCSVOptions(t *testing.T) {
	t.Parallel()
	t.Run("header below title lines", func(t *testing.T) {
		t.Parallel()
		text := "Members export, 2024\n\"Printed by: admin\"\nemail;name\na@x.no;A\n"
		r := openCSV(t, writeFile(t, "title.csv", []byte(text)), sources.CSVOptions{HeaderRow: 3})
		require.Equal(t, ';', r.Delimiter(), "sniffed from the header line on")
		require.Equal(t, []string{"email", "name"}, r.Header())
		requireRows(t, []row{{line: 4, values: []string{"a@x.no", "A"}}}, readAll(t, r))
	})
	t.Run("delimiter and encoding configured", func(t *testing.T) {
		t.Parallel()
		// ISO-8859-15 has € at 0xA4, where Windows-1252 has ¤.
		text := []byte("email,name;price\na@x.no,A;\xA4 5\n")
		r := openCSV(t, writeFile(t, "iso.csv", text), sources.CSVOptions{Delimiter: ";", Encoding: "iso-8859-15"})
		require.Equal(t, "iso-8859-15", r.Encoding())
		require.Equal(t, []string{"email,name", "price"}, r.Header())
		requireRows(t, []row{{line: 2, values: []string{"a@x.no,A", "€ 5"}}}, readAll(t, r))
	})
	t.Run("utf-16 takes its byte order from the mark", func(t *testing.T) {
		t.Parallel()
		r := openCSV(t, writeFile(t, "be.csv", []byte("\xFE\xFF\x00e\x00,\x00n\x00\n\x00\xe6\x00,\x00b\x00\n")), sources.CSVOptions{Encoding: "utf-16"})
		require.Equal(t, sources.EncodingUTF16BE, r.Encoding())
		requireRows(t, []row{{line: 2, values: []string{"æ", "b"}}}, readAll(t, r))
	})
	t.Run("tab by name", func(t *testing.T) {
		t.Parallel()
		r := openCSV(t, writeFile(t, "tab.tsv", []byte("email\tname\na@x.no\tA\n")), sources.CSVOptions{Delimiter: "tab"})
		require.Equal(t, '\t', r.Delimiter())
		requireRows(t, []row{{line: 2, values: []string{"a@x.no", "A"}}}, readAll(t, r))
	})
	t.Run("invalid UTF-8 in a file said to be UTF-8", func(t *testing.T) {
		t.Parallel()
		text := append([]byte("email,city\na@x.no,"), win1252(t, "Tromsø\nb@x.no,Oslo\n")...)
		r := openCSV(t, writeFile(t, "bad.csv", text), sources.CSVOptions{Encoding: "utf-8", StrayLines: sources.StrayReject})
		requireRows(t, []row{
			{line: 2, errHas: "column 2: is not valid UTF-8"},
			{line: 3, values: []string{"b@x.no", "Oslo"}},
		}, readAll(t, r))
	})
	t.Run("one column", func(t *testing.T) {
		t.Parallel()
		r := openCSV(t, writeFile(t, "one.csv", []byte("email\na@x.no\nb@x.no\n")), sources.CSVOptions{})
		require.Equal(t, []string{"email"}, r.Header())
		require.Len(t, readAll(t, r), 2)
	})
}

// A file whose header cannot be read fails at once, saying why.
func TestCSVOpenErrors(t *testing.T) {
	t.Parallel()
	random := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	tests := []struct {
		name    string
		data    []byte
		opts    sources.CSVOptions
		wantIs  error
		wantHas string
	}{
		{"empty file", nil, sources.CSVOptions{}, sources.ErrNoHeader, "the file is empty"},
		{"blank lines only", []byte("\n\r\n  \n;;;\n"), sources.CSVOptions{}, sources.ErrNoHeader, "only blank lines"},
		{"unterminated quote in the header", []byte("email,\"name\na,b\n"), sources.CSVOptions{}, sources.ErrNoHeader, "line 1: the quoted field starting on line 1 is never closed"},
		{"header_row past the end", []byte("email\na@x.no\n"), sources.CSVOptions{HeaderRow: 5}, sources.ErrNoHeader, "header_row 5 is past the end of the file (2 lines)"},
		{"header_row blank", []byte("title\n\nemail\n"), sources.CSVOptions{HeaderRow: 2}, sources.ErrNoHeader, "header_row 2 is blank"},
		{"binary data", random, sources.CSVOptions{}, sources.ErrContentMismatch, "binary data (NUL and control bytes, not text), not CSV text"},
		{"a PNG image", append([]byte("\x89PNG\r\n\x1a\n"), random...), sources.CSVOptions{}, sources.ErrContentMismatch, "a PNG image"},
		{"a workbook", []byte("PK\x03\x04rest of a zip"), sources.CSVOptions{}, sources.ErrContentMismatch, "a zip archive (an .xlsx workbook?), not CSV text"},
		{"an .xls", oleFile(false), sources.CSVOptions{}, sources.ErrLegacyXLS, "save it as .xlsx or CSV"},
		{"an encrypted workbook", oleFile(true), sources.CSVOptions{}, sources.ErrEncryptedWorkbook, "password"},
		{"a byte order mark against the configured encoding", []byte("\xFF\xFEe\x00"), sources.CSVOptions{Encoding: "windows-1252"}, nil, "the file starts with a utf-16le byte order mark"},
		{"unknown encoding", []byte("email\n"), sources.CSVOptions{Encoding: "klingon"}, nil, `unknown encoding "klingon"`},
		{"bad delimiter", []byte("email\n"), sources.CSVOptions{Delimiter: "ab"}, nil, `delimiter "ab"`},
		{"quote as delimiter", []byte("email\n"), sources.CSVOptions{Delimiter: `"`}, nil, `want one ASCII character other than a quote`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, "contacts.csv", tt.data)
			r, err := sources.OpenCSV(context.Background(), path, tt.opts)
			require.Nil(t, r)
			require.Error(t, err)
			if tt.wantIs != nil {
				require.ErrorIs(t, err, tt.wantIs)
			}
			require.Contains(t, err.Error(), tt.wantHas)
			require.Contains(t, err.Error(), path, "the error names the file")
		})
	}
	t.Run("a directory", func(t *testing.T) {
		t.Parallel()
		_, err := sources.OpenCSV(context.Background(), t.TempDir(), sources.CSVOptions{})
		require.ErrorContains(t, err, "is a directory")
	})
	t.Run("a missing file", func(t *testing.T) {
		t.Parallel()
		_, err := sources.OpenCSV(context.Background(), filepath.Join(t.TempDir(), "nope.csv"), sources.CSVOptions{})
		require.ErrorIs(t, err, os.ErrNotExist)
	})
}

// oleFile returns the start of an OLE compound file: with encrypted, one whose directory
// names the streams of an encrypted OOXML package; else one like an .xls.
func oleFile(encrypted bool) []byte {
	b := append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 1024)...)
	name := "Workbook"
	if encrypted {
		name = "EncryptionInfo"
	}
	for _, c := range []byte(name) {
		b = append(b, c, 0)
	}
	return append(b, make([]byte, 512)...)
}

func TestCSVProgressAndCancel(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("email\n")
	for range 50000 {
		b.WriteString("someone@example.com\n")
	}
	path := writeFile(t, "big.csv", []byte(b.String()))
	r := openCSV(t, path, sources.CSVOptions{})
	p := r.Progress()
	require.Equal(t, int64(len(b.String())), p.TotalBytes)
	require.Less(t, p.Bytes, p.TotalBytes, "a large file is not read whole at open")
	_, err := r.Next(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(1), r.Progress().Rows)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.Next(ctx)
	require.ErrorIs(t, err, context.Canceled)

	_, err = sources.OpenCSV(ctx, path, sources.CSVOptions{})
	require.ErrorIs(t, err, context.Canceled, "open honours ctx too")
}

// TestCSVCutShort: a file whose last line has no line end and cannot be read (a file cut
// short) says so at the end, read by Next or by NextLines; a last line without a line end
// that reads well, or a broken line followed by a line end, does not.
func TestCSVCutShort(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data string
		want       int // the line Truncated reports
	}{
		{"cut in a field", "email,name\na@x.no,Ola\nb@x.no,Kari\nc@x.n", 4},
		{"cut in a quoted field", "email,name\na@x.no,Ola\nb@x.no,\"Kari\nNord", 4},
		{"a broken row, then blank space", "email,name\na@x.no\n  ", 0},
		{"ends without a line end", "email,name\na@x.no,Ola\nb@x.no,Kari", 0},
		{"a broken row with a line end", "email,name\na@x.no,Ola\nb@x.no\n", 0},
		{"a broken row in the middle", "email,name\na@x.no\nb@x.no,Kari", 0},
		{"only a header", "email,name", 0},
	}
	for _, tt := range tests {
		for _, lines := range []bool{false, true} {
			path := writeFile(t, "cut.csv", []byte(tt.data))
			r := openCSV(t, path, sources.CSVOptions{})
			require.Zero(t, r.Truncated(), "%s: before the end", tt.name)
			if lines {
				recs, ls := make([]sources.Record, 4), make([]string, 4)
				for {
					_, err := r.NextLines(context.Background(), recs, ls)
					if errors.Is(err, io.EOF) {
						break
					}
					var rowErr *sources.RowError
					if !errors.As(err, &rowErr) {
						require.NoError(t, err)
					}
				}
			} else {
				readAll(t, r)
			}
			require.Equal(t, tt.want, r.Truncated(), "%s (NextLines: %v)", tt.name, lines)
		}
	}
}
