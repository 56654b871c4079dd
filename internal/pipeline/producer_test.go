package pipeline

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
)

// TestProducerChunksInSourceOrder: the producer hands on chunks of at most chunkRows records
// in source order, mapped on several goroutines, with the rejects of invalid rows as outcomes,
// the last chunk marked eof; records at or below the start position are not rows again.
func TestProducerChunksInSourceOrder(t *testing.T) {
	t.Parallel()
	bad := func(i int) bool { return i%500 == 7 }
	cfg, _ := stubConfig(t, people(3500, bad), nil)
	cfg.DryRun = true
	e, err := New(cfg)
	require.NoError(t, err)
	out := make(chan *chunk, 8)
	go e.prod.produce(context.Background(), 1000, out)

	next := int64(1001)
	var rejected []int64
	chunks := 0
	for c := range out {
		require.NoError(t, c.err)
		chunks++
		for _, r := range c.rows {
			require.Equal(t, next, r.Ordinal, "rows in source order")
			next++
			if bad(int(next)) {
				next++ // its reject is an outcome
			}
		}
		for _, o := range c.outcomes {
			require.Equal(t, outRejected, o.kind)
			rejected = append(rejected, o.ord)
		}
		require.LessOrEqual(t, len(c.rows)+len(c.outcomes), chunkRows)
		if c.eof {
			require.Equal(t, int64(3500), c.lastRead)
			break
		}
	}
	require.Equal(t, int64(3501), next)
	require.Equal(t, []int64{1007, 1507, 2007, 2507, 3007}, rejected)
	require.GreaterOrEqual(t, chunks, 3)
}

// TestSourceHashOfLinesAndValues: a delta sync finds a row unchanged from its source hash, so
// the hash of a simple CSV line (read whole, never split) must be the hash of its values read
// as values (what the last run stored), whether the mapping uses every column or not; values
// that hold the delimiter must not hash like other values that join to the same text; and a
// column the mapping ignores does not count.
func TestSourceHashOfLinesAndValues(t *testing.T) {
	t.Parallel()
	const file = "E-post,Fornavn,Sist innlogget\n" +
		"a@example.com,Ada,1\n" +
		"\"b@example.com\",Bob,1\n" + // quoted: read as values; its values are those of a simple line
		"b@example.com,Bob,1\n" +
		"c@example.com,\"Cy,Jr\",1\n" + // the values hold the delimiter
		"c@example.com,Cy,\"Jr,1\"\n" +
		"a@example.com,Ada,2\n"
	path := filepath.Join(t.TempDir(), "crm.csv")
	require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
	for _, tc := range []struct {
		name    string
		columns string
	}{
		{"every column mapped", "\"Sist innlogget\" = \"lastname\"\n"},
		{"a column ignored", "\"Sist innlogget\" = \"ignore\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			byValues, err := sources.OpenCSV(ctx, path, sources.CSVOptions{})
			require.NoError(t, err)
			defer byValues.Close()
			byLines, err := sources.OpenCSV(ctx, path, sources.CSVOptions{})
			require.NoError(t, err)
			defer byLines.Close()
			spec, err := mapping.ParseSpec([]byte("[columns]\n\"E-post\" = \"email\"\nFornavn = \"firstname\"\n" + tc.columns))
			require.NoError(t, err)
			m, err := mapping.Compile(spec, byValues.Header(), mapping.Fields{})
			require.NoError(t, err)
			p := newProducer(Config{Reader: byLines, Mapper: m}, nil)
			var hashes []uint64
			var scratch []byte
			for {
				rec, err := byValues.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				whole, line, err := byLines.NextLine(ctx)
				require.NoError(t, err)
				want := p.sourceHash(rec, "", &scratch)
				if line != "" {
					require.Equal(t, want, p.sourceHash(whole, line, &scratch), "line %d: %q", rec.Line, line)
				}
				hashes = append(hashes, want)
			}
			require.Len(t, hashes, 6)
			require.Equal(t, hashes[1], hashes[2], "a quoted value is the value")
			require.NotEqual(t, hashes[3], hashes[4], "Cy,Jr | 1 is not Cy | Jr,1")
			if tc.name == "a column ignored" {
				require.Equal(t, hashes[0], hashes[5], "only an ignored column changed")
			} else {
				require.NotEqual(t, hashes[0], hashes[5])
			}
		})
	}
}
