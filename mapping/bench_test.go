package mapping

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// benchRecords is how many records one benchmark operation maps and encodes.
const benchRecords = 1_000_000

// benchInput makes n distinct, realistic records of header: mixed-case e-mails with stray
// spaces, Norwegian letters, phone numbers as people type them, dates in several forms. They
// are written to a CSV file and read back with subsync's CSV reader, so that they sit in
// memory as the records a run maps do.
func benchInput(tb testing.TB, n int, header []string) []sources.Record {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "records.csv")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	for _, rec := range benchValues(n, header) {
		_ = w.Write(rec)
	}
	w.Flush()
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		tb.Fatal(err)
	}
	r, err := sources.OpenCSV(tb.Context(), path, sources.CSVOptions{Encoding: "utf-8", Delimiter: ","})
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	recs := make([]sources.Record, 0, n)
	for {
		rec, err := r.Next(tb.Context())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != n {
		tb.Fatalf("read %d records back, want %d", len(recs), n)
	}
	return recs
}

// benchValues makes the values of benchInput's records.
func benchValues(n int, header []string) [][]string {
	firsts := []string{"Ola", "Kari", "Åse", "Bjørn", "Per  Olav", "Ingrid", "Mohammed", "Siv"}
	locals := []string{"Ola", "Kari", "Åse", "Bjørn", "Per-Olav", "Ingrid", "Mohammed", "Siv"}
	lasts := []string{"Nordmann", "Hansen", "Ærø", "Bø", "Olsen", "Johansen", "Ali", "Lie"}
	phones := []string{"912 34 %03d", "+47 412%05d", "0047 9876%04d", "4795%06d"}
	recs := make([][]string, n)
	for i := range recs {
		v := map[string]string{
			"E-post":      fmt.Sprintf(" %s.%s%d@Example.NO", locals[i%8], lasts[i%7], i),
			"Fornavn":     firsts[i%8],
			"Etternavn":   lasts[i%7],
			"Adresse":     fmt.Sprintf("Storgata %d", i%200),
			"Postnr":      fmt.Sprintf("%04d", i%10000),
			"Poststed":    "Oslo",
			"Mobil":       fmt.Sprintf(phones[i%4], i%1000),
			"Født":        []string{"17.05.1985", fmt.Sprintf("1990-01-%02d", i%28+1), fmt.Sprintf("3.1.%02d", i%28+1), "31184"}[i%4],
			"Nyhetsbrev":  []string{"ja", "nei", "x", ""}[i%4],
			"Medlemsnr":   fmt.Sprint(i),
			"Medlemstype": []string{"Gull", "sølv", "Bronse"}[i%3],
			"Innmeldt":    []string{"01.02.2020", "2021-03-04", fmt.Sprintf("5.6.%02d", i%20)}[i%3],
			"Grupper":     []string{"VIP;Nye  kunder", "", fmt.Sprintf("Kunde;Region  %d", i%5)}[i%3],
		}
		values := make([]string, len(header))
		for j, h := range header {
			values[j] = v[h]
		}
		recs[i] = values
	}
	return recs
}

// BenchmarkMapEncode maps and JSON-encodes (into a reused buffer) 1,000,000 records per
// operation and reports records/s and allocations per record, on one goroutine and on as many
// as the pipeline maps with (GOMAXPROCS, a chunk of 1000 records each at a time):
//
//	go test -run '^$' -bench BenchmarkMapEncode ./mapping/
func BenchmarkMapEncode(b *testing.B) {
	cases := []struct {
		name   string
		spec   string
		header []string
	}{
		{"standard_fields", `
[columns]
"E-post" = "email"
Fornavn = "firstname"
Etternavn = "lastname"
Adresse = "address"
Postnr = "zip"
Poststed = "city"
Mobil = "phone"
"Født" = "birthday"
`, []string{"E-post", "Fornavn", "Etternavn", "Adresse", "Postnr", "Poststed", "Mobil", "Født"}},
		{"with_consent_and_custom", `
[columns]
"E-post" = "email"
Fornavn = "firstname"
Etternavn = "lastname"
Mobil = "phone"
Nyhetsbrev = "SAMTYKKEEPOST"
Medlemsnr = "custom:Medlemsnummer"
Medlemstype = "custom:Medlemstype"
`, []string{"E-post", "Fornavn", "Etternavn", "Mobil", "Nyhetsbrev", "Medlemsnr", "Medlemstype"}},
	}
	for _, bc := range cases {
		for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", bc.name, workers), func(b *testing.B) {
				m := mustCompile(b, bc.spec, bc.header, testFields())
				recs := benchInput(b, 10_000, bc.header)
				var bytes int64
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				cpuBefore := cpuTime()
				b.ResetTimer()
				ops := 0
				for b.Loop() {
					n, err := mapEncode(m, recs, benchRecords, workers, nil)
					if err != nil {
						b.Fatal(err)
					}
					bytes += n
					ops++
				}
				b.StopTimer()
				cpu := cpuTime() - cpuBefore
				runtime.ReadMemStats(&after)
				total := float64(ops) * benchRecords
				b.ReportMetric(total/b.Elapsed().Seconds(), "records/s")
				// On a shared machine the wall clock also counts time the process waited for a
				// core; records per CPU second (GC included) is the figure that does not.
				if cpu > 0 {
					b.ReportMetric(total/cpu.Seconds(), "records/cpu_s")
				}
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/total, "allocs/record")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/record")
				b.ReportMetric(float64(bytes)/total, "json_bytes/record")
			})
		}
	}
}

// mapEncode maps and JSON-encodes n records, going round recs, on workers goroutines that
// take chunks of mapChunk records in turn, as the pipeline maps. Each goroutine maps into an
// Arena that it resets after each chunk, as the pipeline resets a chunk's Arena once the
// chunk's rows are in their batches; that is, unless out is given: it gets the i-th payload
// at out[i], to keep. It returns the bytes of JSON made, or the first reject as an error.
func mapEncode(m *Mapper, recs []sources.Record, n, workers int, out []sink.Subscriber) (int64, error) {
	const mapChunk = 1000
	var next, bytes atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var a Arena // as each of the pipeline's mapping goroutines has
			var row Row
			buf := make([]byte, 0, 1024)
			var made int64
			defer func() { bytes.Add(made) }()
			for {
				from := int(next.Add(mapChunk)) - mapChunk
				if from >= n {
					return
				}
				if out == nil {
					a.Reset() // the chunk's rows are done with (see the comment above)
				}
				for i := from; i < min(from+mapChunk, n); i++ {
					rej := m.MapInto(&a, &recs[i%len(recs)], &row)
					if rej != nil {
						mu.Lock()
						firstErr = cmp.Or(firstErr, error(rej))
						mu.Unlock()
						return
					}
					buf = row.Sub.AppendJSON(buf[:0])
					made += int64(len(buf))
					if out != nil {
						out[i] = row.Sub
					}
				}
			}
		})
	}
	wg.Wait()
	return bytes.Load(), firstErr
}
