package sinktest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// appendBulkBody appends 1000 rows as subsync sends them (a dozen fields each, one custom
// field) for the e-mails person<offset>… to dst: strconv rather than fmt, so that filling a
// large store is quick.
func appendBulkBody(dst []byte, offset int) []byte {
	dst = append(dst, '[')
	for i := range MaxBulkRows {
		if i > 0 {
			dst = append(dst, ',')
		}
		n := offset + i
		dst = strconv.AppendInt(append(dst, `{"email":"person`...), int64(n), 10)
		dst = append(dst, `@example.com","firstname":"Kari","lastname":"Nordmann","address":"Storgata `...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `","zip":"0150","city":"Oslo","phone":"+47`...)
		dst = strconv.AppendInt(dst, int64(10_000_000+n), 10)
		dst = append(dst, `","company":"ACME AS","birthday":"1980-05-17","gender":"female","SAMTYKKEEPOST":"1","EXTRA1":"`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `"}`...)
	}
	return append(dst, ']')
}

// postBulk sends one bulkinsert body into list 1 of e, without the network.
func postBulk(tb testing.TB, e *Emulator, body []byte) {
	req := httptest.NewRequest("POST", V2Prefix+"/subscribers/bulkinsert?subscriber_list_id=1", bytes.NewReader(body))
	req.SetBasicAuth(DefaultUser, DefaultKey)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		tb.Fatalf("status %d: %s", w.Code, w.Body)
	}
}

// BenchmarkBulkInsertGrowing measures a 1000-row bulkinsert of new subscribers into an
// emulator that already holds held subscribers: the cost per row should not depend on held.
// The collector runs at Go's default pace, so a store that gives it much to mark shows here.
// cpu-ns/row is the process's CPU time (every thread, the collector's too) per row: on a
// shared machine it varies less than ns/row.
//
//	go test ./sink/sinktest -run '^$' -bench BulkInsertGrowing -benchtime 2000x
func BenchmarkBulkInsertGrowing(b *testing.B) {
	for _, held := range []int{0, 1_000_000, 5_000_000} {
		b.Run("held="+strconv.Itoa(held), func(b *testing.B) {
			e := New()
			e.CreateList("L")
			e.CreateCustomField("Score", "number")
			var body []byte
			for off := 0; off < held; off += MaxBulkRows {
				body = appendBulkBody(body[:0], off)
				postBulk(b, e, body)
			}
			b.ReportAllocs()
			rows := 0
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				body = appendBulkBody(body[:0], held+rows)
				b.StartTimer()
				cpu0 := processCPU()
				postBulk(b, e, body)
				cpu += processCPU() - cpu0
				rows += MaxBulkRows
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(rows), "cpu-ns/row")
			if got := e.SubscriberCount(); got != held+rows {
				b.Fatalf("holds %d subscribers, want %d", got, held+rows)
			}
		})
	}
}
