package mapping

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
)

// BenchmarkMappingVsDelivery checks that mapping is not what limits an import. It measures,
// in alternation so that the machine's load weighs on both alike, two rates over the same
// records:
//
//   - mapping: records mapped and JSON-encoded per second on one goroutine, as the pipeline
//     maps (BenchmarkMapEncode measures the same on its own);
//   - delivery: rows per second the client delivers to the emulator over real HTTP, 1000 to
//     a request, each row new to the emulator as in an import, with 1 and with 4 requests in
//     flight (the emulator runs in this process and shares the machine).
//
// It reports both and their ratio:
//
//	go test -run '^$' -bench BenchmarkMappingVsDelivery ./mapping/
func BenchmarkMappingVsDelivery(b *testing.B) {
	const rows = 100_000 // a round: map them all, then deliver them all to a new emulator
	const spec = `
[columns]
"E-post" = "email"
Fornavn = "firstname"
Etternavn = "lastname"
Mobil = "phone"
"Født" = "birthday"
Nyhetsbrev = "SAMTYKKEEPOST"
Medlemsnr = "custom:Medlemsnummer"
Medlemstype = "custom:Medlemstype"
`
	header := []string{"E-post", "Fornavn", "Etternavn", "Mobil", "Født", "Nyhetsbrev", "Medlemsnr", "Medlemstype"}
	recs := benchInput(rows, header)
	workers := runtime.GOMAXPROCS(0)
	for _, inFlight := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("in_flight=%d", inFlight), func(b *testing.B) {
			var mapTime, deliverTime, mapCPU, deliverCPU time.Duration
			var mapped, delivered int
			for b.Loop() {
				srv, client, m := paceService(b, spec, header, inFlight)
				out := make([]sink.Subscriber, rows)

				start, cpu := time.Now(), cpuTime()
				mapAll(b, m, recs, out, workers)
				mapTime += time.Since(start)
				mapCPU += cpuTime() - cpu
				mapped += len(recs)

				start, cpu = time.Now(), cpuTime()
				delivered += deliver(b, client, srv.CreateList("bench"), out, inFlight)
				deliverTime += time.Since(start)
				deliverCPU += cpuTime() - cpu
				srv.Close()
			}
			mapRate := float64(mapped) / mapTime.Seconds()
			deliverRate := float64(delivered) / deliverTime.Seconds()
			b.ReportMetric(mapRate, "mapped/s")
			b.ReportMetric(deliverRate, "delivered/s")
			b.ReportMetric(mapRate/deliverRate, "ratio")
			b.ReportMetric(float64(mapped)/mapCPU.Seconds(), "mapped/cpu_s")
			b.ReportMetric(float64(delivered)/deliverCPU.Seconds(), "delivered/cpu_s")
			b.ReportMetric(0, "ns/op") // an op is a round of both; the rates are the figures
		})
	}
}

// mapAll maps and encodes recs into out on workers goroutines, each a stretch of 1000
// records at a time, as the pipeline maps chunks.
const chunk = 1000

func mapAll(b *testing.B, m *Mapper, recs []sources.Record, out []sink.Subscriber, workers int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			buf := make([]byte, 0, 1024)
			for {
				from := int(next.Add(chunk)) - chunk
				if from >= len(recs) {
					return
				}
				for i := from; i < min(from+chunk, len(recs)); i++ {
					row, rej := m.Map(recs[i])
					if rej != nil {
						b.Errorf("reject in benchmark input: %v", rej)
						return
					}
					buf = row.Sub.AppendJSON(buf[:0])
					out[i] = row.Sub
				}
			}
		})
	}
	wg.Wait()
}

// paceService starts an emulator with the custom fields of the benchmark's mapping, a client
// of it with inFlight requests at most and no rate limit, and the mapping compiled against
// the emulator's fields.
func paceService(b *testing.B, spec string, header []string, inFlight int) (*sinktest.Server, *sink.Client, *Mapper) {
	b.Helper()
	srv := sinktest.NewServer(b)
	srv.CreateCustomField("Medlemsnummer", sink.DatatypeNumber)
	srv.CreateCustomField("Medlemstype", sink.DatatypeSingleChoice, "Gull", "Sølv", "Bronse")
	client, err := sink.New(sink.Config{
		BaseURL: srv.URL, UserID: srv.User, APIKey: srv.Key, HTTPClient: srv.Client(),
		RequestsPerSecond: -1, MaxInFlight: inFlight, Timeout: time.Minute,
	})
	if err != nil {
		b.Fatal(err)
	}
	list, err := client.CustomFields(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	return srv, client, mustCompile(b, spec, header, NewFields(list))
}

// deliver sends rows to list in requests of sink.MaxBatchRows from inFlight goroutines and
// returns how many the service took; every row must be taken.
func deliver(b *testing.B, client *sink.Client, list int64, rows []sink.Subscriber, inFlight int) int {
	batches := make(chan []sink.Subscriber)
	var mu sync.Mutex
	sent := 0
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	for range inFlight {
		wg.Go(func() {
			for batch := range batches {
				res, err := client.InsertBatch(ctx, sink.BulkOptions{ListID: list}, batch)
				if err != nil || res.Sent != len(batch) {
					b.Errorf("InsertBatch = %+v, %v", res, err)
					cancel()
					return
				}
				mu.Lock()
				sent += res.Sent
				mu.Unlock()
			}
		})
	}
	for i := 0; i < len(rows); i += sink.MaxBatchRows {
		select {
		case batches <- rows[i:min(i+sink.MaxBatchRows, len(rows))]:
		case <-ctx.Done():
		}
	}
	close(batches)
	wg.Wait()
	if sent != len(rows) {
		b.Fatalf("delivered %d of %d rows", sent, len(rows))
	}
	return sent
}
