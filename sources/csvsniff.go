package sources

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
)

// Encoding names a CSVReader reports (see [CSVReader.Encoding]).
const (
	EncodingUTF8        = "utf-8"
	EncodingUTF16LE     = "utf-16le"
	EncodingUTF16BE     = "utf-16be"
	EncodingWindows1252 = "windows-1252"
)

// Delimiters tried, in order of preference on a tie, when none is configured.
const sniffDelimiters = ",;\t|"

var (
	bomUTF8    = []byte{0xEF, 0xBB, 0xBF}
	bomUTF16LE = []byte{0xFF, 0xFE}
	bomUTF16BE = []byte{0xFE, 0xFF}
)

// sniffBOM returns the encoding a byte order mark announces and the length of the mark,
// or "" and 0 without one.
func sniffBOM(head []byte) (string, int) {
	switch {
	case bytes.HasPrefix(head, bomUTF8):
		return EncodingUTF8, len(bomUTF8)
	case bytes.HasPrefix(head, bomUTF16LE):
		return EncodingUTF16LE, len(bomUTF16LE)
	case bytes.HasPrefix(head, bomUTF16BE):
		return EncodingUTF16BE, len(bomUTF16BE)
	}
	return "", 0
}

// textEncoding resolves an encoding name: one of the Encoding constants, or any WHATWG label
// ("utf8", "latin1", "iso-8859-15", "cp1252", "utf-16", ...). It returns nil for UTF-8,
// which needs no decoding, and the canonical name. A byte order mark is handled by the
// caller: the decoders returned here ignore it.
func textEncoding(name string) (encoding.Encoding, string, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "utf-8", "utf8":
		return nil, EncodingUTF8, nil
	case "utf-16le", "utf-16", "utf16":
		return unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), EncodingUTF16LE, nil
	case "utf-16be":
		return unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), EncodingUTF16BE, nil
	case "windows-1252", "cp1252":
		return charmap.Windows1252, EncodingWindows1252, nil
	}
	enc, err := htmlindex.Get(name)
	if err != nil {
		return nil, "", fmt.Errorf("unknown encoding %q (want utf-8, windows-1252, iso-8859-15, utf-16le, utf-16be or another WHATWG label)", name)
	}
	canonical, _ := htmlindex.Name(enc)
	if canonical == EncodingUTF8 {
		return nil, EncodingUTF8, nil
	}
	return enc, canonical, nil
}

// validUTF8Buffer reports whether everything r yields is valid UTF-8, reading with buf (at
// least utf8.UTFMax bytes).
func validUTF8Buffer(ctx context.Context, r io.Reader, buf []byte) (bool, error) {
	carry := 0
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		n, err := io.ReadFull(r, buf[carry:])
		total := carry + n
		done := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !done {
			return false, err
		}
		end := total
		if !done {
			end -= incompleteRuneTail(buf[:total])
		}
		if !utf8.Valid(buf[:end]) {
			return false, nil
		}
		if done {
			return true, nil
		}
		carry = copy(buf, buf[end:total])
	}
}

// incompleteRuneTail returns how many bytes at the end of b start a rune that b cuts short.
func incompleteRuneTail(b []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c&0xC0 == 0x80 {
			continue // a continuation byte: look further back for the start
		}
		need := 1
		switch {
		case c >= 0xF0:
			need = 4
		case c >= 0xE0:
			need = 3
		case c >= 0xC0:
			need = 2
		}
		if need > i {
			return i
		}
		return 0
	}
	return 0
}

// sniffDelimiter picks the delimiter of a CSV sample: of ',', ';', tab and '|', the one that
// occurs in the header line (the first non-blank record) and splits the most following
// records into as many fields as the header; then the one the header holds most of; then
// the first in that order. Characters inside double quotes do not count. Without any
// candidate in the header (a one-column file) it returns ','. atEOF says whether the sample
// is the whole file: if not, its last, possibly cut, record is left out.
func sniffDelimiter(sample string, atEOF bool) byte {
	records := sampleRecords(sample, atEOF, 20)
	if len(records) == 0 {
		return ','
	}
	best, bestConsistent, bestHeader := byte(','), -1, 0
	for i := 0; i < len(sniffDelimiters); i++ {
		d := sniffDelimiters[i]
		header := countOutsideQuotes(records[0], d)
		if header == 0 {
			continue
		}
		consistent := 0
		for _, rec := range records[1:] {
			if countOutsideQuotes(rec, d) == header {
				consistent++
			}
		}
		if consistent > bestConsistent || (consistent == bestConsistent && header > bestHeader) {
			best, bestConsistent, bestHeader = d, consistent, header
		}
	}
	return best
}

// sampleRecords splits a sample into up to max non-blank records, keeping line breaks
// inside double quotes.
func sampleRecords(sample string, atEOF bool, max int) []string {
	var records []string
	inQuote, start := false, 0
	for i := 0; i < len(sample) && len(records) < max; i++ {
		switch sample[i] {
		case '"':
			inQuote = !inQuote
		case '\n', '\r':
			if !inQuote {
				if rec := sample[start:i]; strings.TrimSpace(rec) != "" {
					records = append(records, rec)
				}
				start = i + 1
			}
		}
	}
	if atEOF && len(records) < max && start < len(sample) {
		if rec := sample[start:]; strings.TrimSpace(rec) != "" {
			records = append(records, rec)
		}
	}
	return records
}

func countOutsideQuotes(rec string, d byte) int {
	n, inQuote := 0, false
	for i := 0; i < len(rec); i++ {
		switch rec[i] {
		case '"':
			inQuote = !inQuote
		case d:
			if !inQuote {
				n++
			}
		}
	}
	return n
}

// parseDelimiter reads a configured delimiter: one ASCII character other than a quote or a
// line break; "tab" and `\t` name the tab.
func parseDelimiter(s string) (byte, error) {
	switch s {
	case "tab", `\t`, "\t":
		return '\t', nil
	}
	if len(s) != 1 || s[0] >= utf8.RuneSelf || s[0] == '"' || s[0] == '\n' || s[0] == '\r' {
		return 0, fmt.Errorf("delimiter %q: want one ASCII character other than a quote or a line break (or \"tab\")", s)
	}
	return s[0], nil
}
