package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestDeltaResolvesLines: a delta run over a CSV file finds a row unchanged whether it is
// read as its line or as values (quoted, a value holding the delimiter, not ASCII); a row
// error in between keeps its line and ordinal; a row without a fingerprint and a changed row
// are mapped and sent.
func TestDeltaResolvesLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "crm.csv")
	write := func(g string) {
		require.NoError(t, os.WriteFile(path, []byte("E-post,Fornavn,Poststed\n"+
			"a@x.no,Ada,Oslo\n"+ // 1
			"\"b@x.no\",Bo,Bergen\n"+ // 2
			",,\n"+ // blank
			"c@x.no,Cy\n"+ // 3: ragged, line 5
			"d@x.no,Dag,Tromsø\n"+ // 4
			"e@x.no,Eva,Oslo\n"+ // 5: no fingerprint
			"f@x.no,\"Fi, Jr\",Oslo\n"+ // 6
			"g@x.no,Gro,"+g+"\n"), 0o600)) // 7
	}
	write("Oslo")
	open, fps := deltaSource(t, path, "[columns]\n\"E-post\" = \"email\"\nFornavn = \"firstname\"\nPoststed = \"city\"\n",
		func(ord int64) bool { return ord == 5 })
	write("Bodø") // row 7 changed since
	r, m := open()
	defer r.Close()
	e, err := New(Config{Reader: r, Mapper: m, Sender: &ackSender{}, Store: &memStore{sup: memSuppressions{}}, MapWorkers: 2,
		ListID: 1, RunID: 1, Owner: "o", Delta: true, Fingerprints: fps})
	require.NoError(t, err)
	require.NotNil(t, e.prod.lines, "the fast path reads lines")
	out := make(chan *chunk, 4)
	go e.prod.produce(context.Background(), 0, out)
	var sent []string
	var counts state.Counts
	var rejects []int
	for c := range out {
		require.NoError(t, c.err)
		for _, row := range c.rows {
			sent = append(sent, row.Sub.Email)
		}
		for _, o := range c.outcomes {
			counts = counts.Add(o.counts())
			if o.reject != nil {
				rejects = append(rejects, o.reject.Line)
			}
		}
		if c.eof {
			require.Equal(t, int64(7), c.lastRead)
			break
		}
	}
	require.Equal(t, []string{"e@x.no", "g@x.no"}, sent)
	require.Equal(t, state.Counts{Unchanged: 4, Rejected: 1}, counts)
	require.Equal(t, []int{5}, rejects)
}

// BenchmarkDeltaRows measures what a delta sync does for each row of a CSV source whose rows
// are unchanged since the last run (a million, as e2ebench -mode delta writes them): read,
// checked against the fingerprints, and counted, on the producer's goroutines, without the
// engine, the River job or the service. ns/row is the wall time a row; cpu-ns/row the CPU.
func BenchmarkDeltaRows(b *testing.B) { benchmarkDeltaRows(b, state.FingerprintLimits{}) }

// BenchmarkDeltaRowsBeyondBudget is BenchmarkDeltaRows with the million fingerprints (33 MB
// in memory) loaded beyond a memory budget: at 1 MiB all on file, at 16 MiB about half of
// them (the first slots of each table) kept in memory.
func BenchmarkDeltaRowsBeyondBudget(b *testing.B) {
	for _, budget := range []int64{1 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("budget=%dMiB", budget>>20), func(b *testing.B) {
			benchmarkDeltaRows(b, state.FingerprintLimits{MemoryBudget: budget, TempDir: b.TempDir()})
		})
	}
}

func benchmarkDeltaRows(b *testing.B, lim state.FingerprintLimits) {
	const n = 1_000_000
	dir := b.TempDir()
	path := filepath.Join(dir, "contacts.csv")
	f, err := os.Create(path)
	require.NoError(b, err)
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "E-post,Fornavn,Etternavn,Adresse,Postnummer,Poststed,Mobil")
	first := []string{"Kari", "Per", "Håkon", "Åse", "Ola", "Ingrid"}
	cities := []string{"Oslo", "Bergen", "Tromsø", "Stavanger"}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "kontakt%d@example.com,%s,Nordmann,Storgata %d,%04d,%s,9%07d\n", i, first[i%len(first)], i%200+1,
			1000+i%9000, cities[i%len(cities)], i)
	}
	require.NoError(b, w.Flush())
	require.NoError(b, f.Close())

	ctx := context.Background()
	open, fps := deltaSourceWithin(b, path, "[columns]\n\"E-post\" = \"email\"\nFornavn = \"firstname\"\nEtternavn = \"lastname\"\n"+
		"Adresse = \"address\"\nPostnummer = \"zip\"\nPoststed = \"city\"\nMobil = \"phone\"\n", nil, lim)
	require.Equal(b, lim.MemoryBudget > 0, fps.Spilled())

	cpu0 := processCPU()
	for b.Loop() {
		r, m := open()
		e, err := New(Config{Reader: r, Mapper: m, Sender: &ackSender{}, Store: &memStore{sup: memSuppressions{}}, MapWorkers: 2, ListID: 1,
			RunID: 1, Owner: "o", Delta: true, Fingerprints: fps})
		require.NoError(b, err)
		out := make(chan *chunk, 4)
		go e.prod.produce(ctx, 0, out)
		var unchanged int64
		for c := range out {
			require.NoError(b, c.err)
			for _, o := range c.outcomes {
				unchanged += o.counts().Unchanged
			}
			e.prod.recycle(c)
			if c.eof {
				break
			}
		}
		require.Equal(b, int64(n), unchanged)
		require.NoError(b, r.Close())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
	b.ReportMetric((processCPU()-cpu0)*1e9/float64(b.N)/n, "cpu-ns/row")
	b.ReportMetric(0, "ns/op")
}

// deltaSource compiles the mapping for the CSV file at path (the e-mail in its first column)
// and stores, in a fresh SQLite database, the fingerprints a first sync of it would have
// (each row's e-mail and source hash; every payload 1), but for the rows skip says; it returns a function that opens the
// file and compiles the mapping, and the loaded fingerprints.
func deltaSource(tb testing.TB, path, mappingTOML string, skip func(ord int64) bool) (func() (*sources.CSVReader, *mapping.Mapper), *state.FingerprintSet) {
	tb.Helper()
	return deltaSourceWithin(tb, path, mappingTOML, skip, state.FingerprintLimits{})
}

// deltaSourceWithin is deltaSource with the fingerprints loaded within lim.
func deltaSourceWithin(tb testing.TB, path, mappingTOML string, skip func(ord int64) bool,
	lim state.FingerprintLimits) (func() (*sources.CSVReader, *mapping.Mapper), *state.FingerprintSet) {
	tb.Helper()
	ctx := context.Background()
	spec, err := mapping.ParseSpec([]byte(mappingTOML))
	require.NoError(tb, err)
	open := func() (*sources.CSVReader, *mapping.Mapper) {
		r, err := sources.OpenCSV(ctx, path, sources.CSVOptions{})
		require.NoError(tb, err)
		m, err := mapping.Compile(spec, r.Header(), mapping.Fields{})
		require.NoError(tb, err)
		return r, m
	}
	r, m := open()
	defer r.Close()
	p := newProducer(Config{Reader: r, Mapper: m, Fingerprints: state.NewFingerprintSet(1)}, nil)
	set := state.NewFingerprintSet(1)
	var scratch []byte
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.As(err, new(*sources.RowError)) || skip != nil && skip(rec.Ordinal) {
			continue
		}
		require.NoError(tb, err)
		set.Add(state.Fingerprint{Email: state.EmailHash(rec.Values[0]), Payload: 1, Source: p.sourceHash(rec, "", &scratch)})
	}
	db, err := state.OpenSQLite(ctx, filepath.Join(tb.TempDir(), "subsync.db"))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = db.Close() })
	_, err = state.Migrate(ctx, db, state.SQLite)
	require.NoError(tb, err)
	store := state.New(db, state.SQLite)
	require.NoError(tb, store.SaveFingerprints(ctx, set))
	fps, err := store.LoadFingerprintsWithin(ctx, 1, lim)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = fps.Close() })
	return open, fps
}

// TestDeltaFingerprintsOnFileFail: a delta run whose fingerprints are on a temporary file
// (beyond the memory budget) fails with the error of a read of that file, and sends nothing:
// a fingerprint it could not read is not taken for a row without one.
func TestDeltaFingerprintsOnFileFail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "crm.csv")
	var src strings.Builder
	src.WriteString("E-post,Fornavn\n")
	for i := range 5000 {
		fmt.Fprintf(&src, "p%d@x.no,P%d\n", i, i)
	}
	require.NoError(t, os.WriteFile(path, []byte(src.String()), 0o600))
	open, fps := deltaSourceWithin(t, path, "[columns]\n\"E-post\" = \"email\"\nFornavn = \"firstname\"\n", nil,
		state.FingerprintLimits{MemoryBudget: 1, TempDir: t.TempDir()})
	require.True(t, fps.Spilled())
	require.NoError(t, fps.Close()) // every read of the file fails from now on
	r, m := open()
	defer r.Close()
	sender := &ackSender{}
	e, err := New(Config{Reader: r, Mapper: m, Sender: sender, Store: &memStore{sup: memSuppressions{}}, MapWorkers: 2,
		ListID: 1, RunID: 1, Owner: "o", Delta: true, Fingerprints: fps})
	require.NoError(t, err)
	err = e.Run(context.Background(), 0)
	require.ErrorContains(t, err, "read the fingerprints' temporary file")
	require.Empty(t, sender.batches)
}

// processCPU is the CPU time (user and system) this process used so far, in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// TestChunksReused: a run makes no more chunks than the stages can hold at once; every chunk
// the engine placed is used again, so a long run allocates its chunks' arrays once (a
// million-row delta sync made a quarter of its thousand chunks anew, 50 MB of garbage).
func TestChunksReused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "crm.csv")
	var b []byte
	b = append(b, "E-post,Fornavn\n"...)
	const n = 60 * chunkRows
	for i := range n {
		b = fmt.Appendf(b, "p%d@x.no,Ada\n", i)
	}
	require.NoError(t, os.WriteFile(path, b, 0o600))
	open, fps := deltaSource(t, path, "[columns]\n\"E-post\" = \"email\"\nFornavn = \"firstname\"\n", nil)
	for _, workers := range []int{1, 2, 4} {
		r, m := open()
		e, err := New(Config{Reader: r, Mapper: m, Sender: &ackSender{}, Store: &memStore{sup: memSuppressions{}}, MapWorkers: workers,
			ListID: 1, RunID: 1, Owner: "o", Delta: true, Fingerprints: fps})
		require.NoError(t, err)
		require.NoError(t, e.Run(context.Background(), 0))
		require.NoError(t, r.Close())
		require.LessOrEqual(t, e.prod.made, chunksInFlight(workers), "%d map workers", workers)
	}
}
