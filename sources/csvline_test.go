package sources_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// TestCSVNextLine: a simple record comes back as its line, every other record as Next
// returns it, and the lines split into the values Next returns.
func TestCSVNextLine(t *testing.T) {
	data := "email,name,zip\r\n" +
		"a@x.no,Ada,0150\r\n" + // simple
		"\"b@x.no\",Bo,0151\r\n" + // quoted
		",,\r\n" + // blank: skipped, no ordinal
		"c@x.no,Céline,0152\r\n" + // simple: valid UTF-8
		"g@x.no,\xE6\xF8,0154\r\n" + // not UTF-8: decoded, with a warning
		"d@x.no,Dag\r\n" + // ragged
		"e@x.no,Eva,0153,,\r\n" + // extra empty fields: trimmed by check
		"f@x.no, ,\r\n" // simple: a blank value is still a value
	path := filepath.Join(t.TempDir(), "c.csv")
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
	r, err := sources.OpenCSV(context.Background(), path, sources.CSVOptions{Encoding: "utf-8"})
	require.NoError(t, err)
	defer r.Close()
	type got struct {
		ord    int64
		line   int
		whole  string
		values []string
		err    string
	}
	var all []got
	for {
		rec, line, err := r.NextLine(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		g := got{ord: rec.Ordinal, line: rec.Line, whole: line, values: rec.Values}
		if err != nil {
			g.err = err.Error()
		}
		all = append(all, g)
	}
	require.Equal(t, []got{
		{ord: 1, line: 2, whole: "a@x.no,Ada,0150"},
		{ord: 2, line: 3, values: []string{"b@x.no", "Bo", "0151"}},
		{ord: 3, line: 5, whole: "c@x.no,Céline,0152"},
		{ord: 4, line: 6, values: []string{"g@x.no", "æø", "0154"}},
		{ord: 5, line: 7, values: []string{"d@x.no", "Dag"}, err: "line 7 column 3: has 2 fields, the header has 3"},
		{ord: 6, line: 8, values: []string{"e@x.no", "Eva", "0153"}},
		{ord: 7, line: 9, whole: "f@x.no, ,"},
	}, all)
	require.Equal(t, []string{"f@x.no", " ", ""}, sources.SplitLine("f@x.no, ,", r.Delimiter()))
	require.Equal(t, "Ada", sources.Field("a@x.no,Ada,0150", ',', 1))
	require.Equal(t, "0150", sources.Field("a@x.no,Ada,0150", ',', 2))
	require.Equal(t, "", sources.Field("a@x.no,Ada,0150", ',', 3))
}

// FuzzCSVNextLine reads any bytes with Next and, from a second reader, with NextLine, and
// from a third with NextLines: the records, their errors, the warnings and the progress are
// the same once the lines are split.
func FuzzCSVNextLine(f *testing.F) {
	f.Add([]byte("email;name\r\na@x.no;\"Ærlig\r\nSøren\"\r\n;;\r\nb@x.no;B;C\r\nc@x.no;C\r\n"), uint8(0))
	f.Add([]byte("a,b\n\"unterminated,x\nc,d\n\"e\"f,g\n ,\t\nx\x00,y\n"), uint8(1))
	f.Add([]byte("h\r1\r\"2\r3\"\r"), uint8(4))
	f.Add([]byte("a\tb\n\x00\t\x00\n1\t2\n1\t2\t\t\n"), uint8(5))
	f.Add([]byte("e,n\nok@x.no,Ok\nbad@x.no,\xE6\xF8\nlong@x.no,"+string(make([]byte, 80))+"\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		path, opts := fuzzCSV(t, data, mode, func(o *sources.CSVOptions) { o.StrayLines = sources.StrayReject })
		ctx := context.Background()
		a, err := sources.OpenCSV(ctx, path, opts)
		if err != nil {
			return
		}
		defer a.Close()
		b, err := sources.OpenCSV(ctx, path, opts)
		require.NoError(t, err)
		defer b.Close()
		c, err := sources.OpenCSV(ctx, path, opts)
		require.NoError(t, err)
		defer c.Close()
		// c reads in batches of 1 to 4 records (NextLines), queued here.
		var queued []sources.Record
		var queuedLines []string
		var queuedErr error
		batch := 1 + int(mode)%4
		nextBatched := func() (sources.Record, string, error) {
			if len(queued) == 0 {
				if queuedErr != nil && !errors.As(queuedErr, new(*sources.RowError)) {
					return sources.Record{}, "", queuedErr
				}
				recs, lines := make([]sources.Record, batch), make([]string, batch)
				n, err := c.NextLines(ctx, recs, lines)
				require.LessOrEqual(t, n, batch)
				if err != nil && !errors.As(err, new(*sources.RowError)) {
					require.Zero(t, n, "a fatal error or the end comes after the records before it")
				}
				queued, queuedLines, queuedErr = recs[:n], lines[:n], err
				if n == 0 {
					return sources.Record{}, "", err
				}
			}
			rec, line := queued[0], queuedLines[0]
			queued, queuedLines = queued[1:], queuedLines[1:]
			var err error
			if len(queued) == 0 && errors.As(queuedErr, new(*sources.RowError)) {
				err, queuedErr = queuedErr, nil // the last record of the batch is the row error
			}
			return rec, line, err
		}
		for range len(data) + 2 {
			want, werr := a.Next(ctx)
			got, line, gerr := b.NextLine(ctx)
			if line != "" {
				require.Nil(t, got.Values)
				got.Values = sources.SplitLine(line, b.Delimiter())
			}
			require.Equal(t, fmt.Sprint(werr), fmt.Sprint(gerr))
			require.Equal(t, want, got)
			require.Equal(t, a.Progress(), b.Progress())
			batched, bline, berr := nextBatched()
			if bline != "" {
				require.Nil(t, batched.Values)
				batched.Values = sources.SplitLine(bline, c.Delimiter())
			}
			require.Equal(t, fmt.Sprint(werr), fmt.Sprint(berr), "batched")
			require.Equal(t, want, batched, "batched")
			if errors.Is(werr, io.EOF) {
				an, aw := a.Warnings()
				bn, bw := b.Warnings()
				require.Equal(t, an, bn)
				require.Equal(t, aw, bw)
				cn, cw := c.Warnings()
				require.Equal(t, an, cn)
				require.Equal(t, aw, cw)
				require.Equal(t, a.Progress(), c.Progress())
				return
			}
		}
		t.Fatalf("no end after %d calls", len(data)+2)
	})
}
