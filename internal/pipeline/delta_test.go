package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// BenchmarkDeltaRows measures what a delta sync does for each row of a CSV source whose rows
// are unchanged since the last run (a million, as e2ebench -mode delta writes them): read,
// checked against the fingerprints, and counted, on the producer's goroutines, without the
// engine, the River job or the service. ns/row is the wall time a row; cpu-ns/row the CPU.
func BenchmarkDeltaRows(b *testing.B) {
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
	spec, err := mapping.ParseSpec([]byte("[columns]\n\"E-post\" = \"email\"\nFornavn = \"firstname\"\nEtternavn = \"lastname\"\n" +
		"Adresse = \"address\"\nPostnummer = \"zip\"\nPoststed = \"city\"\nMobil = \"phone\"\n"))
	require.NoError(b, err)
	open := func() (*sources.CSVReader, *mapping.Mapper) {
		r, err := sources.OpenCSV(ctx, path, sources.CSVOptions{})
		require.NoError(b, err)
		m, err := mapping.Compile(spec, r.Header(), mapping.Fields{})
		require.NoError(b, err)
		return r, m
	}

	// The fingerprints a first sync stored: each row's e-mail and source hash.
	r, m := open()
	p := newProducer(Config{Reader: r, Mapper: m, Fingerprints: state.NewFingerprintSet(1)}, nil)
	set := state.NewFingerprintSet(1)
	var scratch []byte
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(b, err)
		set.Add(state.Fingerprint{Email: state.EmailHash(rec.Values[0]), Payload: 1, Source: p.sourceHash(rec, "", &scratch)})
	}
	require.NoError(b, r.Close())
	db, err := state.OpenSQLite(ctx, filepath.Join(dir, "subsync.db"))
	require.NoError(b, err)
	defer db.Close()
	_, err = state.Migrate(ctx, db, state.SQLite)
	require.NoError(b, err)
	store := state.New(db, state.SQLite)
	require.NoError(b, store.SaveFingerprints(ctx, set))
	fps, err := store.LoadFingerprints(ctx, 1)
	require.NoError(b, err)

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

// processCPU is the CPU time (user and system) this process used so far, in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
