package jobs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// csvUpdate writes status changes into a contacts CSV file in place, as an UPDATE would into
// a table: the rows whose email column holds the address (trimmed, case-insensitive) get the
// change's status (and time). A change whose address no row holds matches nothing. The file
// is rewritten to a temporary file beside it, synced, and renamed over it, so a reader sees
// the old file or the new one, never half of one; its byte order mark, delimiter and line
// ends are kept, and its fields are quoted only where CSV needs it. Only UTF-8 files are
// updated. The file is left untouched when no change matches.
type csvUpdate struct {
	path, emailColumn, statusColumn, changedAtColumn string
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (w *csvUpdate) write(_ context.Context, wbs []state.WriteBack) ([]bool, error) {
	matched, err := w.update(wbs)
	if err != nil {
		return nil, fmt.Errorf("write back to %s: %w", w.path, err)
	}
	return matched, nil
}

func (w *csvUpdate) update(wbs []state.WriteBack) ([]bool, error) {
	f, err := os.Open(w.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	t, err := w.open(f)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(w.path), "."+filepath.Base(w.path)+".subsync-*")
	if err != nil {
		return nil, err
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	found, err := t.rewrite(tmp, wbs)
	if err != nil {
		return nil, err
	}
	matched := make([]bool, len(wbs))
	for i, wb := range wbs {
		matched[i] = found[state.NormaliseEmail(wb.Change.Email)]
	}
	if len(found) == 0 {
		return matched, nil // nothing to change: the file stays as it is
	}
	if err := replaceFile(tmp, w.path, info.Mode().Perm()); err != nil {
		return nil, err
	}
	renamed = true
	return matched, nil
}

// csvTable is a contacts CSV file being read: its header and the columns a write-back sets.
type csvTable struct {
	r                      *csv.Reader
	header                 []string
	comma                  rune
	bom, crlf              bool
	email, status, changed int // column indexes; changed is -1 without changed_at_column
}

// open reads the byte order mark and the header of a contacts file and finds the columns,
// adding the status (and changed_at) column when the header lacks it.
func (w *csvUpdate) open(f io.Reader) (*csvTable, error) {
	br := bufio.NewReaderSize(f, 64<<10)
	t := &csvTable{changed: -1}
	if head, _ := br.Peek(3); bytes.Equal(head, utf8BOM) {
		t.bom = true
		_, _ = br.Discard(3)
	}
	headerLine, err := br.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	t.comma, t.crlf = sniffComma(headerLine), strings.HasSuffix(headerLine, "\r\n")
	t.r = csv.NewReader(io.MultiReader(strings.NewReader(headerLine), br))
	t.r.Comma, t.r.FieldsPerRecord = t.comma, -1
	header, err := t.r.Read()
	if err != nil {
		return nil, fmt.Errorf("read the header: %w", err)
	}
	t.header = append([]string(nil), header...)
	col := func(name string) int {
		for i, h := range t.header {
			if strings.EqualFold(strings.TrimSpace(h), strings.TrimSpace(name)) {
				return i
			}
		}
		t.header = append(t.header, name)
		return len(t.header) - 1
	}
	if t.email = col(w.emailColumn); t.email == len(header) {
		return nil, fmt.Errorf("the header has no column %q (status.write_back.email_column)", w.emailColumn)
	}
	t.status = col(w.statusColumn)
	if w.changedAtColumn != "" {
		t.changed = col(w.changedAtColumn)
	}
	return t, nil
}

// rewrite writes the file to out with the changes applied (the latest change of an address
// wins; wbs are oldest first) and returns the addresses it found.
func (t *csvTable) rewrite(out io.Writer, wbs []state.WriteBack) (map[string]bool, error) {
	latest := make(map[string]int, len(wbs))
	for i, wb := range wbs {
		latest[state.NormaliseEmail(wb.Change.Email)] = i
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	if t.bom {
		_, _ = bw.Write(utf8BOM)
	}
	cw := csv.NewWriter(bw)
	cw.Comma, cw.UseCRLF = t.comma, t.crlf
	if err := cw.Write(t.header); err != nil {
		return nil, err
	}
	found := map[string]bool{}
	for line := 2; ; line++ {
		rec, err := t.r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the file: %w", err)
		}
		for _, v := range rec {
			if !utf8.ValidString(v) {
				return nil, fmt.Errorf("line %d is not UTF-8: subsync updates UTF-8 files only", line)
			}
		}
		for len(rec) < len(t.header) {
			rec = append(rec, "")
		}
		key := state.NormaliseEmail(rec[t.email])
		if i, ok := latest[key]; ok && key != "" {
			c := wbs[i].Change
			rec[t.status] = c.Status
			if t.changed >= 0 {
				rec[t.changed] = c.ChangedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
			}
			found[key] = true
		}
		if err := cw.Write(rec); err != nil {
			return nil, err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return nil, err
	}
	return found, bw.Flush()
}

// replaceFile makes tmp, written in full, the file at path: mode set, synced, closed and
// renamed over it, the rename synced too.
func replaceFile(tmp *os.File, path string, mode os.FileMode) error {
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// sniffComma picks the delimiter of a CSV header line: the most frequent of , ; tab and |
// outside quotes (a comma when none occurs).
func sniffComma(line string) rune {
	counts := map[rune]int{}
	quoted := false
	for _, c := range line {
		switch {
		case c == '"':
			quoted = !quoted
		case !quoted && (c == ',' || c == ';' || c == '\t' || c == '|'):
			counts[c]++
		}
	}
	best := ','
	for _, c := range []rune{';', '\t', '|'} {
		if counts[c] > counts[best] {
			best = c
		}
	}
	return best
}

// PrepareWriteBack checks, writing nothing, that a write-back can run: a sql statement is
// prepared on the source database (the database checks its syntax, its tables and columns),
// the contacts file of a csv write-back with an email column is read for its header, and the
// directory of an appended csv file is looked at. It returns what it checked.
func PrepareWriteBack(ctx context.Context, spec WriteBackSpec) (string, error) {
	switch {
	case spec.Kind == WriteBackSQL:
		stmt, err := sources.BindSQL(spec.Driver, spec.Statement, writeBackParams)
		if err != nil {
			return "", fmt.Errorf("write-back statement: %w", err)
		}
		if err := sources.PrepareSQL(ctx, spec.DSN, stmt); err != nil {
			return "", fmt.Errorf("%s: %w", spec, err)
		}
		return fmt.Sprintf("the write-back statement prepares on the source database (%s)", spec), nil
	case spec.Kind == WriteBackCSV && spec.EmailColumn != "":
		w := &csvUpdate{path: spec.Path, emailColumn: spec.EmailColumn}
		f, err := os.Open(spec.Path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", spec, err)
		}
		defer f.Close()
		if _, err := w.open(f); err != nil {
			return "", fmt.Errorf("%s: %w", spec, err)
		}
		return fmt.Sprintf("the write-back's contacts file %s has the column %q", spec.Path, spec.EmailColumn), nil
	case spec.Kind == WriteBackCSV:
		dir := filepath.Dir(spec.Path)
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return "", fmt.Errorf("%s: the directory %s does not exist", spec, dir)
		}
		return fmt.Sprintf("the write-back's directory %s exists", dir), nil
	}
	return "", nil
}
