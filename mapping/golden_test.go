package mapping

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata golden files")

// archive is a txtar-like file: a comment, then sections that each start with a line
// "-- name --". golang.org/x/tools is not a dependency, so this is the whole format.
type archive struct {
	comment string
	names   []string
	files   map[string]string
}

func parseArchive(data string) archive {
	a := archive{files: map[string]string{}}
	name := ""
	var b strings.Builder
	flush := func() {
		if name == "" {
			a.comment = b.String()
		} else {
			a.names = append(a.names, name)
			a.files[name] = b.String()
		}
		b.Reset()
	}
	for line := range strings.SplitAfterSeq(data, "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			flush()
			name = strings.TrimSpace(trimmed[3 : len(trimmed)-3])
			continue
		}
		b.WriteString(line)
	}
	flush()
	return a
}

func (a archive) format() string {
	var b strings.Builder
	b.WriteString(a.comment)
	for _, n := range a.names {
		fmt.Fprintf(&b, "-- %s --\n", n)
		b.WriteString(a.files[n])
	}
	return b.String()
}

func TestArchiveRoundTrip(t *testing.T) {
	t.Parallel()
	in := "a comment\n-- one --\nx\ny\n-- two --\n-- three --\nz\n"
	a := parseArchive(in)
	require.Equal(t, "a comment\n", a.comment)
	require.Equal(t, []string{"one", "two", "three"}, a.names)
	require.Equal(t, "x\ny\n", a.files["one"])
	require.Equal(t, "", a.files["two"])
	require.Equal(t, in, a.format())
}

// TestGolden runs every case in testdata/cases: input rows (input.csv), a mapping
// (mapping.toml; absent for auto-mapping), the service's custom fields (fields.json,
// optional), and the expected result per row (want): the JSON payload as sent with its
// status, or the reject.
func TestGolden(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("testdata", "cases", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			a := parseArchive(string(data))
			got := runGolden(t, a)
			if *update {
				if _, ok := a.files["want"]; !ok {
					a.names = append(a.names, "want")
				}
				a.files["want"] = got
				require.NoError(t, os.WriteFile(path, []byte(a.format()), 0o644))
				return
			}
			want, ok := a.files["want"]
			require.True(t, ok, "%s has no want section (run with -update)", path)
			require.Equal(t, want, got, "%s: got the lines below, want the file's want section", path)
		})
	}
}

func runGolden(t *testing.T, a archive) string {
	t.Helper()
	input, ok := a.files["input.csv"]
	require.True(t, ok, "no input.csv section")
	r := newCSVReader(t, input)
	var fields []sink.CustomField
	if raw := a.files["fields.json"]; strings.TrimSpace(raw) != "" {
		require.NoError(t, json.Unmarshal([]byte(raw), &fields))
	}
	var out strings.Builder
	spec := Spec{}
	if raw, ok := a.files["mapping.toml"]; ok {
		spec, err := ParseSpec([]byte(raw))
		if err != nil {
			return "spec error: " + err.Error() + "\n"
		}
		return runGoldenRows(t, &out, r, spec, fields)
	}
	spec, unplaced := spec.WithAuto(r.Header())
	fmt.Fprintf(&out, "auto, unplaced: %s\n", strings.Join(quoteAll(unplaced), ", "))
	return runGoldenRows(t, &out, r, spec, fields)
}

func runGoldenRows(t *testing.T, out *strings.Builder, r *csvReader, spec Spec, fields []sink.CustomField) string {
	t.Helper()
	// As a run does: the date orders decided from the first rows (here all of them).
	sample := csv.NewReader(strings.NewReader(r.text))
	sample.FieldsPerRecord = -1
	rows, err := sample.ReadAll()
	require.NoError(t, err)
	spec, orders := spec.WithDateOrders(r.Header(), rows[1:])
	for _, o := range orders {
		fmt.Fprintf(out, "date order of %q: %q, %s\n", o.Column, o.Order, o.Reason)
	}
	m, err := compile(spec, r.Header(), NewFields(fields), testToday)
	if err != nil {
		fmt.Fprintf(out, "compile error: %v\n", err)
		return out.String()
	}
	d := m.NewDeduper()
	var buf []byte
	for {
		rec, err := r.Next(t.Context())
		if errors.Is(err, io.EOF) {
			break
		}
		var rowErr *sources.RowError
		if errors.As(err, &rowErr) {
			rej := m.RejectRow(rec, rowErr)
			writeReject(out, &rej)
			continue
		}
		require.NoError(t, err)
		var row Row
		var warns []Reject
		if rej := m.MapWarn(nil, &rec, &row, &warns); rej != nil {
			writeReject(out, rej)
			continue
		}
		for _, w := range warns {
			fmt.Fprintf(out, "line %d: warning %s column=%q value=%q: %s\n", w.Line, w.Code, w.Column, w.Value, w.Message)
		}
		send, dupRej := d.Check(row)
		rej := dupRej
		if rej != nil {
			writeReject(out, rej)
			continue
		}
		if !send {
			fmt.Fprintf(out, "line %d: skipped duplicate\n", row.Line)
			continue
		}
		buf = row.Sub.AppendJSON(buf[:0])
		require.True(t, json.Valid(buf), "payload is not JSON: %s", buf)
		fmt.Fprintf(out, "line %d: %s", row.Line, buf)
		if row.Status != "" {
			fmt.Fprintf(out, " status=%s", row.Status)
		}
		if row.StatusMobile != "" {
			fmt.Fprintf(out, " status_mobile=%s", row.StatusMobile)
		}
		out.WriteByte('\n')
	}
	if d.Duplicates() > 0 {
		fmt.Fprintf(out, "duplicates: %d\n", d.Duplicates())
	}
	return out.String()
}

func writeReject(out *strings.Builder, r *Reject) {
	fmt.Fprintf(out, "line %d: reject %s column=%q value=%q: %s\n", r.Line, r.Code, r.Column, r.Value, r.Message)
}

// The golden harness itself must notice a difference.
func TestGoldenDetectsChange(t *testing.T) {
	t.Parallel()
	a := parseArchive("-- mapping.toml --\ncolumns = { E = \"email\" }\n-- input.csv --\nE\nA@B.NO\n")
	require.Equal(t, "line 2: {\"email\":\"a@b.no\"}\n", runGolden(t, a))
	var b bytes.Buffer
	b.WriteString(runGolden(t, parseArchive("-- input.csv --\nE-post,X\nA@B.NO,1\n")))
	require.Equal(t, "auto, unplaced: \"X\"\nline 2: {\"email\":\"a@b.no\"}\n", b.String())
}
