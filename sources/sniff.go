package sources

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
)

// content is what the first bytes of a file say it is.
type content int

const (
	contentText   content = iota // text, possibly with a byte order mark
	contentZip                   // a zip archive: an .xlsx workbook, or another OOXML/ODF file
	contentOLE                   // an OLE compound file: an .xls workbook or an encrypted .xlsx
	contentBinary                // anything else that is not text
)

var (
	magicZip      = []byte("PK\x03\x04")
	magicZipEmpty = []byte("PK\x05\x06")
	magicOLE      = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}
)

// knownBinary names common binary formats by their magic numbers, for error messages.
var knownBinary = []struct {
	magic []byte
	name  string
}{
	{[]byte("%PDF"), "a PDF document"},
	{[]byte("\x89PNG"), "a PNG image"},
	{[]byte("\xFF\xD8\xFF"), "a JPEG image"},
	{[]byte("GIF8"), "a GIF image"},
	{[]byte("\x1F\x8B"), "a gzip archive"},
	{[]byte("7z\xBC\xAF"), "a 7-Zip archive"},
	{[]byte("Rar!"), "a RAR archive"},
	{[]byte("SQLite format 3\x00"), "an SQLite database"},
}

// sniffContent classifies the first bytes of a file and describes it for error messages.
func sniffContent(head []byte) (content, string) {
	switch {
	case bytes.HasPrefix(head, magicZip), bytes.HasPrefix(head, magicZipEmpty):
		return contentZip, "a zip archive (an .xlsx workbook?)"
	case bytes.HasPrefix(head, magicOLE):
		return contentOLE, "an OLE compound file (an Excel 97-2003 .xls or an encrypted workbook)"
	case hasBOM(head):
		return contentText, "text"
	}
	for _, k := range knownBinary {
		if bytes.HasPrefix(head, k.magic) {
			return contentBinary, k.name
		}
	}
	if looksBinary(head) {
		return contentBinary, "binary data (NUL and control bytes, not text)"
	}
	return contentText, "text"
}

// looksBinary reports whether a sample without a byte order mark is binary: more than 1%
// NUL bytes, or more than 3% control characters other than white space (random data has
// 11%, text next to none). A stray NUL in a text file is left to the reader, which
// reports its row.
func looksBinary(b []byte) bool {
	var nul, ctrl int
	for _, c := range b {
		switch {
		case c == 0:
			nul++
			ctrl++
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1A, c == 0x7F:
			ctrl++
		}
	}
	return (nul > 1 && nul*100 > len(b)) || (ctrl > 2 && ctrl*33 > len(b))
}

func hasBOM(b []byte) bool {
	return bytes.HasPrefix(b, bomUTF8) || bytes.HasPrefix(b, bomUTF16LE) || bytes.HasPrefix(b, bomUTF16BE)
}

// readHead reads up to n bytes from the start of path.
func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	k, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	return buf[:k], nil
}

// oleEncrypted tells an encrypted OOXML workbook from an .xls (or another OLE file) by the
// stream names in its directory, stored as UTF-16LE. It scans the file with a small buffer.
func oleEncrypted(ctx context.Context, r io.Reader) (bool, error) {
	encrypted := utf16le("EncryptionInfo")
	br := bufio.NewReaderSize(r, 64<<10)
	window := make([]byte, 0, 64<<10+len(encrypted))
	buf := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		n, err := br.Read(buf)
		window = append(window, buf[:n]...)
		if bytes.Contains(window, encrypted) {
			return true, nil
		}
		if len(window) > len(encrypted) {
			window = append(window[:0], window[len(window)-len(encrypted):]...)
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read: %w", err)
		}
	}
}

func utf16le(s string) []byte {
	b := make([]byte, 0, 2*len(s))
	for _, c := range []byte(s) {
		b = append(b, c, 0)
	}
	return b
}
