package mapping

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

const previewSpec = `
duplicates = "reject"
tags = ["import"]
[columns]
"E-post" = "email"
Fornavn = "firstname"
Mobil = "phone"
Nyhetsbrev = "SAMTYKKEEPOST"
Medlemstype = "custom:Medlemstype"
Notat = "ignore"
[constants]
company = "Acme AS"
`

const previewCSV = `E-post,Fornavn,Mobil,Nyhetsbrev,Medlemstype,Notat,Ekstra
ola@example.no,Ola,91234567,ja,gull,,
bad,Per,,,,,
kari@example.no,Kari,+46701234567,nei,Sølv,x,y
OLA@example.no,Ola 2,,,,,
short,row
per@example.no,Per,,,,,
`

func previewMapper(t *testing.T) *Mapper {
	t.Helper()
	return mustCompile(t, previewSpec, []string{"E-post", "Fornavn", "Mobil", "Nyhetsbrev", "Medlemstype", "Notat", "Ekstra"}, testFields())
}

func TestPreviewText(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	stats, err := Preview(t.Context(), &out, newCSVReader(t, previewCSV), previewMapper(t), PreviewOptions{Rows: 2})
	require.NoError(t, err)
	require.Equal(t, PreviewStats{
		Rows: 6, Mapped: 3, Rejected: 3, Duplicates: 1,
		ByCode:   map[string]int64{CodeDuplicateEmail: 1, CodeInvalidEmail: 1, CodeRowUnreadable: 1},
		Unplaced: []string{"Ekstra"},
	}, stats)
	want := `Columns (7):
  E-post       email
  Fornavn      firstname
  Mobil        phone
  Nyhetsbrev   SAMTYKKEEPOST
  Medlemstype  custom:Medlemstype → EXTRA4 (single_choice)
  Notat        ignore (not sent)
  Ekstra       - (not mapped, not sent)
Constants:
  company = "Acme AS"
Tags on every row: import
Duplicate e-mail addresses: reject

First 2 mapped rows:
LINE  email            firstname  phone         company  Medlemstype (EXTRA4)  SAMTYKKEEPOST  tags    status
2     ola@example.no   Ola        +4791234567   Acme AS  Gull                  1              import
4     kari@example.no  Kari       +46701234567  Acme AS  Sølv                  0              import  unsubscribed

Rejects:
LINE  COLUMN  CODE             VALUE             MESSAGE
3     E-post  invalid_email    "bad"             the e-mail address has no @
5     E-post  duplicate_email  "ola@example.no"  the e-mail address is on an earlier row too
6             row_unreadable                     the row has 2 cells, the header 7

6 rows read: 3 mapped, 3 rejected (duplicate_email 1, invalid_email 1, row_unreadable 1), 1 duplicate e-mail address (rejected: the first row wins).
Not mapped, so not sent: "Ekstra". Map them, or list them under ignore.
`
	require.Equal(t, want, out.String())
}

func TestPreviewJSON(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_, err := Preview(t.Context(), &out, newCSVReader(t, previewCSV), previewMapper(t), PreviewOptions{Rows: 1, JSON: true})
	require.NoError(t, err)
	var doc struct {
		Columns   []PlanEntry       `json:"columns"`
		Constants map[string]string `json:"constants"`
		Tags      []string          `json:"tags"`
		Rows      []struct {
			Line    int            `json:"line"`
			Payload map[string]any `json:"payload"`
			Status  string         `json:"status"`
		} `json:"rows"`
		Rejects []Reject     `json:"rejects"`
		Stats   PreviewStats `json:"stats"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), "%s", out.String())
	require.Len(t, doc.Columns, 7)
	require.Equal(t, PlanEntry{Column: "Medlemstype", Target: "custom:Medlemstype", Slot: "EXTRA4", Datatype: "single_choice"}, doc.Columns[4])
	require.Equal(t, map[string]string{"company": "Acme AS"}, doc.Constants)
	require.Len(t, doc.Rows, 1)
	require.Equal(t, 2, doc.Rows[0].Line)
	require.Equal(t, map[string]any{"email": "ola@example.no", "firstname": "Ola", "phone": "+4791234567", "company": "Acme AS", "EXTRA4": "Gull", "SAMTYKKEEPOST": "1", "tags": []any{"import"}}, doc.Rows[0].Payload)
	require.Len(t, doc.Rejects, 3)
	require.Equal(t, Reject{Ordinal: 2, Line: 3, Column: "E-post", Value: "bad", Code: CodeInvalidEmail, Message: "the e-mail address has no @"}, doc.Rejects[0])
	require.Equal(t, int64(6), doc.Stats.Rows)
}

func TestPreviewHoldsRejectsBackOnlySoFar(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("E-post\n")
	for i := range maxHeldRejects + 5 {
		fmt.Fprintf(&b, "bad%d\n", i)
	}
	b.WriteString("ok@example.no\n")
	m := mustCompile(t, `columns = { "E-post" = "email" }`, []string{"E-post"}, Fields{})
	var out bytes.Buffer
	stats, err := Preview(t.Context(), &out, newCSVReader(t, b.String()), m, PreviewOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(maxHeldRejects+5), stats.Rejected)
	require.Equal(t, int64(1), stats.Mapped)
	text := out.String()
	require.Contains(t, text, "First 0 mapped rows:", "the table is written once too many rejects wait")
	require.Equal(t, maxHeldRejects+5, strings.Count(text, "invalid_email  "), "every reject is written")
}

func TestPreviewNoRows(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, `columns = { "E-post" = "email" }`, []string{"E-post"}, Fields{})
	var out bytes.Buffer
	stats, err := Preview(t.Context(), &out, newCSVReader(t, "E-post\na@b.no\n"), m, PreviewOptions{Rows: -1})
	require.NoError(t, err)
	require.Equal(t, int64(1), stats.Mapped)
	require.Contains(t, out.String(), "First 0 mapped rows:\n\n1 row read")
}

func TestPreviewSourceFails(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, `columns = { "E-post" = "email" }`, []string{"E-post"}, Fields{})
	r := newCSVReader(t, "E-post\na@b.no\n")
	r.fail = errors.New("connection lost")
	var out bytes.Buffer
	stats, err := Preview(t.Context(), &out, r, m, PreviewOptions{JSON: true})
	require.ErrorContains(t, err, "preview: read row 2: connection lost")
	require.Equal(t, int64(1), stats.Rows)
	require.True(t, json.Valid(out.Bytes()), "the JSON document is complete even so: %s", out.String())

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = Preview(ctx, &out, newCSVReader(t, "E-post\na@b.no\n"), m, PreviewOptions{})
	require.ErrorIs(t, err, context.Canceled)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestPreviewWriteFails(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, `columns = { "E-post" = "email" }`, []string{"E-post"}, Fields{})
	var b strings.Builder
	b.WriteString("E-post\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "a%d@b.no\n", i)
	}
	_, err := Preview(t.Context(), failingWriter{}, newCSVReader(t, b.String()), m, PreviewOptions{})
	require.ErrorContains(t, err, "preview: write: disk full")
}

// The preview reports rows of a worksheet by sheet and row.
func TestPreviewSheetRows(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, `columns = { "E-post" = "email" }`, []string{"E-post"}, Fields{})
	r := &sheetReader{recs: []sources.Record{{Ordinal: 1, Line: 2, Sheet: "Ark1", Values: []string{"a@b.no"}}, {Ordinal: 2, Line: 3, Sheet: "Ark1", Values: []string{"x"}}}}
	var out bytes.Buffer
	_, err := Preview(t.Context(), &out, r, m, PreviewOptions{})
	require.NoError(t, err)
	require.Contains(t, out.String(), "\nArk1:2  a@b.no\n")
	require.Contains(t, out.String(), "\nArk1:3  E-post  invalid_email")
}

type sheetReader struct {
	recs []sources.Record
	i    int
}

func (s *sheetReader) Header() []string { return []string{"E-post"} }
func (s *sheetReader) Next(context.Context) (sources.Record, error) {
	if s.i == len(s.recs) {
		return sources.Record{}, io.EOF
	}
	s.i++
	return s.recs[s.i-1], nil
}
func (s *sheetReader) Progress() sources.Progress { return sources.Progress{} }
func (s *sheetReader) Close() error               { return nil }

// TestPreviewDropped: under on_invalid = "drop" the preview maps a row with a bad phone
// number without it, and counts what is dropped.
func TestPreviewDropped(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "on_invalid = \"drop\"\n"+previewSpec, []string{"E-post", "Fornavn", "Mobil", "Nyhetsbrev", "Medlemstype", "Notat", "Ekstra"}, testFields())
	var out bytes.Buffer
	stats, err := Preview(t.Context(), &out, newCSVReader(t, "E-post,Fornavn,Mobil,Nyhetsbrev,Medlemstype,Notat,Ekstra\nola@example.no,Ola,12345,ja,Platina,,\n"), m, PreviewOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(1), stats.Mapped)
	require.Equal(t, int64(0), stats.Rejected)
	require.Equal(t, map[string]int64{CodeInvalidPhone: 1, CodeInvalidChoice: 1}, stats.Dropped)
	require.Contains(t, out.String(), `invalid values dropped from rows sent (on_invalid = "drop"): invalid_choice 1, invalid_phone 1`)
}
