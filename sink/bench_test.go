package sink_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

// Benchmarks of the client's cost per 1000-row bulkinsert. Run them with
//
//	go test ./sink -run '^$' -bench InsertBatch1000 -benchmem
//
// BenchmarkInsertBatch1000 and BenchmarkInsertBatch1000Parallel go to the emulator in the same
// process, so their ns/op and allocs/op include the emulator's work (decoding, validating and
// storing 1000 rows). BenchmarkInsertBatch1000Discard answers each request without reading
// the rows, which leaves mostly the client's cost (encoding, HTTP) plus reading the body.

func benchRows(b *testing.B, slots map[string]string) []sink.Subscriber {
	b.Helper()
	return richRows(sink.MaxBatchRows, slots)
}

func reportRows(b *testing.B, rows int64) {
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkInsertBatch1000(b *testing.B) {
	tb := setup(b, nil)
	list := tb.srv.CreateList("bench")
	rows := benchRows(b, createSlots(tb.srv))
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		res, err := tb.client.InsertBatch(ctx, sink.BulkOptions{ListID: list}, rows)
		if err != nil || res.Sent != len(rows) {
			b.Fatalf("InsertBatch = %+v, %v", res, err)
		}
	}
	reportRows(b, int64(b.N)*int64(len(rows)))
}

// BenchmarkInsertBatch1000Parallel measures the rows per second the client delivers to the
// emulator with MaxInFlight 4 and no rate limit, from four goroutines sharing one Client.
func BenchmarkInsertBatch1000Parallel(b *testing.B) {
	tb := setup(b, func(cfg *sink.Config) { cfg.MaxInFlight = 4; cfg.RequestsPerSecond = -1 })
	list := tb.srv.CreateList("bench")
	slots := createSlots(tb.srv)
	ctx := b.Context()
	var sent atomic.Int64
	b.ReportAllocs()
	// RunParallel starts parallelism × GOMAXPROCS goroutines: aim at four.
	b.SetParallelism(max(1, 4/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		rows := benchRows(b, slots) // each goroutine its own rows (the same e-mails: upserts)
		for pb.Next() {
			res, err := tb.client.InsertBatch(ctx, sink.BulkOptions{ListID: list}, rows)
			if err != nil || res.Sent != len(rows) {
				b.Errorf("InsertBatch = %+v, %v", res, err)
				return
			}
			sent.Add(int64(res.Sent))
		}
	})
	reportRows(b, sent.Load())
}

func BenchmarkInsertBatch1000Discard(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"200 Success"}`)
	}))
	b.Cleanup(srv.Close)
	c, err := sink.New(sink.Config{
		BaseURL: srv.URL, UserID: "u", APIKey: "k", HTTPClient: srv.Client(),
		RequestsPerSecond: -1, Timeout: time.Minute,
	})
	require.NoError(b, err)
	slots := map[string]string{"number": "EXTRA1", "string": "EXTRA2", "date": "EXTRA3", "choice": "EXTRA4"}
	rows := benchRows(b, slots)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.InsertBatch(ctx, sink.BulkOptions{ListID: 1}, rows); err != nil {
			b.Fatal(err)
		}
	}
	reportRows(b, int64(b.N)*int64(len(rows)))
}

// BenchmarkEncodeBatch1000 is the encoding alone: 1000 rows into one JSON array.
func BenchmarkEncodeBatch1000(b *testing.B) {
	slots := map[string]string{"number": "EXTRA1", "string": "EXTRA2", "date": "EXTRA3", "choice": "EXTRA4"}
	rows := benchRows(b, slots)
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		buf = append(buf[:0], '[')
		for i := range rows {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = rows[i].AppendJSON(buf)
		}
		buf = append(buf, ']')
	}
	b.SetBytes(int64(len(buf)))
	reportRows(b, int64(b.N)*int64(len(rows)))
}

// BenchmarkInsertBatch1000Distinct sends 1000 subscribers the emulator has not seen in each
// request, as an import does (BenchmarkInsertBatch1000 upserts the same 1000 again).
func BenchmarkInsertBatch1000Distinct(b *testing.B) {
	tb := setup(b, nil)
	list := tb.srv.CreateList("bench")
	rows := benchRows(b, createSlots(tb.srv))
	ctx := b.Context()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := range rows {
			rows[j].Email = fmt.Sprintf("p%d.%05d@example.com", i, j)
		}
		b.StartTimer()
		res, err := tb.client.InsertBatch(ctx, sink.BulkOptions{ListID: list}, rows)
		if err != nil || res.Sent != len(rows) {
			b.Fatalf("InsertBatch = %+v, %v", res, err)
		}
	}
	reportRows(b, int64(b.N)*int64(len(rows)))
}
