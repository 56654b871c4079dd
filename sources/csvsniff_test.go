package sources

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestSniffDelimiter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		sample string
		atEOF  bool
		want   byte
	}{
		{"comma", "a,b,c\n1,2,3\n", true, ','},
		{"semicolon with decimal commas", "navn;beløp\nOla;1,5\nKari;2,25\n", true, ';'},
		{"tab with commas in values", "name\tnote\nOla\ta, b, c\n", true, '\t'},
		{"pipe", "a|b\n1|2\n", true, '|'},
		{"a comma in a quoted header cell", "\"Address, City\";Zip\n\"Gate 1, Oslo\";0150\n", true, ';'},
		{"one column", "email\na@x.no\n", true, ','},
		{"empty", "", true, ','},
		{"header with semicolons, rows agree", "a;b;c\n1;2;3\n4;5;6\n", false, ';'},
		{"the cut last line is left out", "a;b\n1;2\n3,4,5,6,7,8", false, ';'},
		{"consistency beats count", "a,b,c;d\n1,2,3;4;5\n1,2,3;4;5;6\n", true, ','},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := sniffDelimiter(tt.sample, tt.atEOF)
			require.Equal(t, string(tt.want), string(got))
		})
	}
}

// FuzzSniff checks the sniffers on any bytes: they never panic, the delimiter is one of the
// candidates, the streaming UTF-8 check agrees with utf8.Valid whatever the buffer size,
// and a table whose cells hold no candidate delimiter is sniffed right.
func FuzzSniff(f *testing.F) {
	f.Add([]byte("email;name\r\na@x.no;Ærlig\r\n"), byte(0), uint8(3))
	f.Add([]byte("\xEF\xBB\xBFa,b\n1,2\n"), byte(1), uint8(2))
	f.Add([]byte("\xFF\xFEa\x00,\x00b\x00"), byte(2), uint8(4))
	f.Add([]byte("\"x\ny\",z\n"), byte(3), uint8(5))
	f.Add([]byte("æøå \xe6\xf8\xe5 \xf0\x9f\x93\xa7"), byte(0), uint8(7))
	f.Add([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0}, byte(1), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, pick byte, size uint8) {
		for _, atEOF := range []bool{false, true} {
			d := sniffDelimiter(string(data), atEOF)
			require.Contains(t, sniffDelimiters, string(d))
		}
		sniffContent(data)
		if enc, n := sniffBOM(data); n > 0 {
			_, name, err := textEncoding(enc)
			require.NoError(t, err)
			require.Equal(t, enc, name)
		}
		buf := make([]byte, utf8.UTFMax+int(size%61))
		valid, err := validUTF8Buffer(context.Background(), bytes.NewReader(data), buf)
		require.NoError(t, err)
		require.Equal(t, utf8.Valid(data), valid, "buffer of %d bytes", len(buf))
		tail := incompleteRuneTail(data)
		require.LessOrEqual(t, tail, utf8.UTFMax-1)

		// A table from the data, without any candidate delimiter, quote or line break in it
		// and with no blank cell.
		clean := strings.Map(func(r rune) rune {
			if strings.ContainsRune(sniffDelimiters+"\"\r\n", r) {
				return -1
			}
			return r
		}, string(data))
		delim := sniffDelimiters[int(pick)%len(sniffDelimiters)]
		cols := 2 + int(size%5)
		var text strings.Builder
		for row := 0; row < 4; row++ {
			for c := range cols {
				if c > 0 {
					text.WriteByte(delim)
				}
				if i := (row*cols + c) % (len(clean) + 1); i < len(clean) {
					text.WriteString(clean[i:min(len(clean), i+3)])
				}
				text.WriteByte('x') // a row of blank cells is a blank line
			}
			text.WriteString("\r\n")
		}
		require.Equal(t, string(delim), string(sniffDelimiter(text.String(), true)), "table:\n%s", text.String())
	})
}
