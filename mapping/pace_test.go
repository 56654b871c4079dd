package mapping

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
)

// paceSpec maps every kind of value benchInput makes but address, zip and city: the e-mail,
// names, a phone number, a birthday, a consent, and a number and a choice custom field (the
// fields of testFields, and of paceService's emulator).
const paceSpec = `
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

// paceHeader is the header of the records paceSpec maps.
var paceHeader = []string{"E-post", "Fornavn", "Etternavn", "Mobil", "Født", "Nyhetsbrev", "Medlemsnr", "Medlemstype"}

// BenchmarkMappingVsDelivery checks that mapping is not what limits an import. It measures,
// in alternation so that the machine's load weighs on both alike, two rates:
//
//   - mapping: records mapped and JSON-encoded per second, on GOMAXPROCS goroutines a chunk
//     of 1000 each at a time, as the pipeline maps (BenchmarkMapEncode measures the same on
//     its own). The records come round from a pool of 10,000, so that they are in the
//     processor's cache as the records the pipeline maps are: it maps each chunk as soon as
//     it is read;
//   - delivery: rows per second the client delivers to the emulator over real HTTP, 1000 to
//     a request, with 1, 2 (a run's default) and 4 requests in flight. The 100,000 rows of a
//     round are new to the emulator, as in an import. The emulator runs in this process:
//     like mapping, delivery has the whole machine.
//
// Each phase starts after a garbage collection, so neither pays for the other's garbage. It
// reports both rates, their ratio, and each per CPU second:
//
//	go test -run '^$' -bench BenchmarkMappingVsDelivery ./mapping/
func BenchmarkMappingVsDelivery(b *testing.B) {
	const rows = 100_000 // a round: map them all, then deliver them all to a new emulator
	spec, header := paceSpec, paceHeader
	pool := benchInput(b, 10_000, header)
	workers := runtime.GOMAXPROCS(0)
	for _, inFlight := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("in_flight=%d", inFlight), func(b *testing.B) {
			var mapTime, deliverTime, mapCPU, deliverCPU time.Duration
			var mapped, delivered int
			var templates []sink.Subscriber
			for b.Loop() {
				emu, client, m, stop := paceService(b, spec, header, inFlight)
				if templates == nil {
					templates = make([]sink.Subscriber, len(pool))
					if _, err := mapEncode(m, pool, len(pool), 1, templates); err != nil {
						b.Fatal(err)
					}
				}

				runtime.GC()
				start, cpu := time.Now(), cpuTime()
				if _, err := mapEncode(m, pool, rows, workers, nil); err != nil {
					b.Fatal(err)
				}
				mapTime += time.Since(start)
				mapCPU += cpuTime() - cpu
				mapped += rows

				// The rows to deliver: the payloads mapping made, each with an address of its
				// own. Made only now, so that mapping ran with as little in memory as the
				// pipeline has.
				out := make([]sink.Subscriber, rows)
				for i := range out {
					out[i] = templates[i%len(templates)]
					out[i].Email = fmt.Sprintf("r%d.%s", i, out[i].Email)
				}
				runtime.GC()
				start, cpu = time.Now(), cpuTime()
				delivered += deliver(b, client, emu.CreateList("bench"), out, inFlight)
				deliverTime += time.Since(start)
				deliverCPU += cpuTime() - cpu
				stop()
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

// paceService starts an emulator with the custom fields of the benchmark's mapping, a client
// of it with inFlight requests at most and no rate limit, and the mapping compiled against
// the emulator's fields. stop shuts the emulator down; nothing else holds on to it, so its
// subscribers are garbage for the next round's collection.
func paceService(b *testing.B, spec string, header []string, inFlight int) (emu *sinktest.Emulator, client *sink.Client, m *Mapper, stop func()) {
	b.Helper()
	emu = sinktest.New()
	hs := httptest.NewServer(emu)
	emu.CreateCustomField("Medlemsnummer", sink.DatatypeNumber)
	emu.CreateCustomField("Medlemstype", sink.DatatypeSingleChoice, "Gull", "Sølv", "Bronse")
	client, err := sink.New(sink.Config{
		BaseURL: hs.URL + sinktest.V2Prefix, UserID: sinktest.DefaultUser, APIKey: sinktest.DefaultKey,
		HTTPClient: hs.Client(), RequestsPerSecond: -1, MaxInFlight: inFlight, Timeout: time.Minute,
	})
	if err != nil {
		hs.Close()
		b.Fatal(err)
	}
	list, err := client.CustomFields(b.Context())
	if err != nil {
		hs.Close()
		b.Fatal(err)
	}
	return emu, client, mustCompile(b, spec, header, NewFields(list)), hs.Close
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
