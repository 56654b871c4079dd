package sources

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// excelize.OpenReader reads the whole file into memory before it unzips anything, so a
// 50 MB workbook costs 50 MB of heap whatever excelize does next. To keep a reader's memory
// flat, OpenXLSX hands excelize a stand-in archive instead: the entries it needs
// (excelizeParts, see xlsxparts.go) with the same names, sizes and checksums, but each one's
// data replaced by an 8-byte key under a private compression method. The decompressor registered for that method looks the key up and
// streams the real entry out of the file on disk. excelize then sees an ordinary workbook
// without worksheets (the reader streams them itself, xlsxsheet.go) or shared strings (the
// reader holds them, and formats a shared-string cell as an inline one, xlsxcell.go).
//
// archive/zip still checks every real entry's size and CRC as it is read, so an entry that
// unpacks to more than its header says (a zip bomb that lies) or is corrupt fails; the error
// is recorded on the entry, because excelize ignores some read errors.

// proxyMethod is the zip compression method number of the stand-in entries.
const proxyMethod uint16 = 0x5353

var (
	proxyOnce    sync.Once
	proxyEntries sync.Map // uint64 key → *proxyEntry
	proxySeq     atomic.Uint64
)

// proxyEntry is one real zip entry behind a stand-in key.
type proxyEntry struct {
	ctx  context.Context
	file *zip.File

	mu  sync.Mutex
	err error // the first read error
}

func (e *proxyEntry) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

func (e *proxyEntry) failed() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// proxyArchive is a stand-in archive and the keys it holds.
type proxyArchive struct {
	data    []byte
	keys    []uint64
	entries []*proxyEntry
}

func newProxyArchive(ctx context.Context, zr *zip.Reader) (*proxyArchive, error) {
	proxyOnce.Do(func() { zip.RegisterDecompressor(proxyMethod, openProxyEntry) })
	p := &proxyArchive{}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if !isExcelizePart(f.Name) {
			continue // not needed, never unpacked (see xlsxparts.go)
		}
		key := proxySeq.Add(1)
		e := &proxyEntry{ctx: ctx, file: f}
		proxyEntries.Store(key, e)
		p.keys = append(p.keys, key)
		p.entries = append(p.entries, e)
		fh := f.FileHeader
		fh.Method = proxyMethod
		fh.Flags &^= 0x8 // no data descriptor: the sizes are in the header
		fh.Extra = nil
		fh.CompressedSize64 = 8
		fw, err := w.CreateRaw(&fh)
		if err != nil {
			p.release()
			return nil, fmt.Errorf("entry %q: %w", f.Name, err)
		}
		var k [8]byte
		binary.LittleEndian.PutUint64(k[:], key)
		if _, err := fw.Write(k[:]); err != nil {
			p.release()
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		p.release()
		return nil, err
	}
	p.data = buf.Bytes()
	return p, nil
}

// err returns the first error met while reading a real entry.
func (p *proxyArchive) err() error {
	for _, e := range p.entries {
		if err := e.failed(); err != nil {
			return fmt.Errorf("unpack %s: %w", e.file.Name, err)
		}
	}
	return nil
}

// release forgets the keys; the stand-in archive cannot be read after it.
func (p *proxyArchive) release() {
	for _, k := range p.keys {
		proxyEntries.Delete(k)
	}
}

// openProxyEntry is the decompressor of proxyMethod: r holds a key.
func openProxyEntry(r io.Reader) io.ReadCloser {
	var k [8]byte
	if _, err := io.ReadFull(r, k[:]); err != nil {
		return errReadCloser{fmt.Errorf("stand-in entry: %w", err)}
	}
	v, ok := proxyEntries.Load(binary.LittleEndian.Uint64(k[:]))
	if !ok {
		return errReadCloser{errors.New("stand-in entry: unknown key (the workbook is closed)")}
	}
	e := v.(*proxyEntry)
	if err := e.failed(); err != nil {
		return errReadCloser{err}
	}
	rc, err := e.file.Open()
	if err != nil {
		e.fail(err)
		return errReadCloser{err}
	}
	return &proxyReader{e: e, rc: rc}
}

type proxyReader struct {
	e  *proxyEntry
	rc io.ReadCloser
}

func (p *proxyReader) Read(b []byte) (int, error) {
	if err := p.e.ctx.Err(); err != nil {
		p.e.fail(err)
		return 0, err
	}
	n, err := p.rc.Read(b)
	if err != nil && err != io.EOF {
		if errors.Is(err, zip.ErrFormat) {
			err = fmt.Errorf("%w: it unpacks to more than the %d bytes its header declares (%w)", ErrTooLarge, p.e.file.UncompressedSize64, err)
		}
		p.e.fail(err)
	}
	return n, err
}

func (p *proxyReader) Close() error { return p.rc.Close() }

type errReadCloser struct{ err error }

func (e errReadCloser) Read([]byte) (int, error) { return 0, e.err }
func (e errReadCloser) Close() error             { return nil }
