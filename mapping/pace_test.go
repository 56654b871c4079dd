package mapping

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
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
	for _, inFlight := range []int{1, 4} {
		b.Run(fmt.Sprintf("in_flight=%d", inFlight), func(b *testing.B) {
			var mapTime, deliverTime time.Duration
			var mapped, delivered int
			for b.Loop() {
				srv, client, m := paceService(b, spec, header, inFlight)
				out := make([]sink.Subscriber, 0, rows)
				buf := make([]byte, 0, 1024)

				start := time.Now()
				for _, rec := range recs {
					row, rej := m.Map(rec)
					if rej != nil {
						b.Fatalf("reject in benchmark input: %v", rej)
					}
					buf = row.Sub.AppendJSON(buf[:0])
					out = append(out, row.Sub)
				}
				mapTime += time.Since(start)
				mapped += len(recs)

				start = time.Now()
				delivered += deliver(b, client, srv.CreateList("bench"), out, inFlight)
				deliverTime += time.Since(start)
				srv.Close()
			}
			mapRate := float64(mapped) / mapTime.Seconds()
			deliverRate := float64(delivered) / deliverTime.Seconds()
			b.ReportMetric(mapRate, "mapped/s")
			b.ReportMetric(deliverRate, "delivered/s")
			b.ReportMetric(mapRate/deliverRate, "ratio")
			b.ReportMetric(0, "ns/op") // an op is a round of both; the rates are the figures
		})
	}
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
