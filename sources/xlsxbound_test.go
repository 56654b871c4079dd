package sources_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// withPart writes a copy of the workbook src with the part name replaced by data (added when
// src has no such part), deflated; lie, when not nil, changes what its header declares
// (its unpacked size, its checksum).
func withPart(t *testing.T, src, name string, data []byte, lie func(*zip.FileHeader)) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "hostile.xlsx")
	write := func(w *zip.Writer) {
		if lie == nil {
			fw, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
			require.NoError(t, err)
			_, err = fw.Write(data)
			require.NoError(t, err)
			return
		}
		var deflated bytes.Buffer
		zw := zip.NewWriter(&deflated)
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		require.NoError(t, err)
		_, err = fw.Write(data)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		zr, err := zip.NewReader(bytes.NewReader(deflated.Bytes()), int64(deflated.Len()))
		require.NoError(t, err)
		raw, err := zr.File[0].OpenRaw()
		require.NoError(t, err)
		fh := zr.File[0].FileHeader
		lie(&fh)
		rw, err := w.CreateRaw(&fh)
		require.NoError(t, err)
		_, err = io.Copy(rw, raw)
		require.NoError(t, err)
	}
	found := false
	rewriteZip(t, src, dst, func(f *zip.File, w *zip.Writer) bool {
		if f.Name != name {
			return false
		}
		found = true
		write(w)
		return true
	})
	if !found {
		rewriteZip(t, dst, dst, func(f *zip.File, w *zip.Writer) bool {
			if f.Name == "[Content_Types].xml" {
				require.NoError(t, w.Copy(f))
				write(w)
				return true
			}
			return false
		})
	}
	return dst
}

// partOf returns the part name of the workbook at path.
func partOf(t *testing.T, path, name string) string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	require.NoError(t, err)
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name == name {
			rc, err := f.Open()
			require.NoError(t, err)
			defer rc.Close()
			b, err := io.ReadAll(rc)
			require.NoError(t, err)
			return string(b)
		}
	}
	t.Fatalf("%s has no part %s", path, name)
	return ""
}

// padded returns the part with n bytes of white space after its first tag's end.
func padded(part string, n int) []byte {
	i := strings.Index(part, "?>") + 2
	return []byte(part[:i] + strings.Repeat(" ", n) + part[i:])
}

// Every part of a workbook the reader parses is bounded before it is parsed (#35): white space
// in the styles or the workbook part (900 MB of it took 6 GB), a part that unpacks to more
// than it declares, more elements than any spreadsheet writes, an attribute larger than a
// cell may be, a row larger than a row may be: each fails at once with ErrTooLarge, naming
// the part. Parts the reader does not need (a theme, pictures, document properties) are
// never unpacked, whatever their size.
func TestXLSXEveryPartBounded(t *testing.T) {
	t.Parallel()
	good := simpleWorkbook(t, 2)
	styles := partOf(t, good, "xl/styles.xml")
	workbook := partOf(t, good, "xl/workbook.xml")
	const big = 17 << 20 // over the 16 MiB a part may take
	cellXfs := strings.Index(styles, "<cellXfs")
	cellXfs += strings.Index(styles[cellXfs:], ">") + 1
	manyXfs := styles[:cellXfs] + strings.Repeat("<xf/>", 1100000) + styles[cellXfs:]
	bigAttr := strings.Replace(workbook, "<workbook ", `<workbook x="`+strings.Repeat("a", 2<<20)+`" `, 1)
	cells := ""
	for i := range 20 {
		cells += fmt.Sprintf(`<c t="inlineStr"><is><t>%s</t></is></c>`, strings.Repeat(string(rune('a'+i)), 1000000))
	}
	bigRow := []byte(sheetHead + `<row r="1"><c r="A1" t="inlineStr"><is><t>email</t></is></c></row><row r="2">` + cells + `</row>` + sheetTail)

	tests := []struct {
		name, part string
		data       []byte
		lie        func(*zip.FileHeader)
		wantHas    string
	}{
		{"white space in the styles", "xl/styles.xml", padded(styles, big), nil,
			"xl/styles.xml unpacks to 178"},
		{"white space in the workbook", "xl/workbook.xml", padded(workbook, big), nil,
			"xl/workbook.xml unpacks to 178"},
		{"white space in the relationships", "xl/_rels/workbook.xml.rels", padded(partOf(t, good, "xl/_rels/workbook.xml.rels"), big), nil,
			"xl/_rels/workbook.xml.rels unpacks to"},
		{"white space in the content types", "[Content_Types].xml", padded(partOf(t, good, "[Content_Types].xml"), big), nil,
			"[Content_Types].xml unpacks to"},
		{"styles that unpack to more than they declare", "xl/styles.xml", padded(styles, big), func(fh *zip.FileHeader) { fh.UncompressedSize64 = uint64(len(styles)) },
			"xl/styles.xml"},
		{"a million cell formats", "xl/styles.xml", []byte(manyXfs), nil,
			"xl/styles.xml holds more than 1048576 elements"},
		{"an attribute larger than a cell", "xl/workbook.xml", []byte(bigAttr), nil,
			"xl/workbook.xml: a tag larger than 1048576 bytes"},
		{"a row larger than a row may be", "xl/worksheets/sheet1.xml", bigRow, nil,
			"row 2 is larger than 16777216 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := withPart(t, good, tt.part, tt.data, tt.lie)
			r, err := sources.OpenXLSX(context.Background(), path, sources.XLSXOptions{TempDir: t.TempDir()})
			if err == nil {
				defer r.Close()
				_, err = readAllErr(r)
			}
			require.ErrorIs(t, err, sources.ErrTooLarge)
			require.ErrorContains(t, err, tt.wantHas)
		})
	}

	// A part that is never unpacked cannot fail: here each is corrupt (its checksum wrong).
	for _, part := range []string{"docProps/app.xml", "xl/theme/theme1.xml", "xl/media/image1.png", "xl/calcChain.xml"} {
		t.Run(part+" is not unpacked", func(t *testing.T) {
			t.Parallel()
			path := withPart(t, good, part, padded(`<?xml version="1.0"?><x/>`, 1<<20), func(fh *zip.FileHeader) { fh.CRC32 ^= 1 })
			r := openXLSX(t, path, sources.XLSXOptions{TempDir: t.TempDir()})
			require.Len(t, readAll(t, r), 2)
		})
	}
}
