package sinktest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// bulkBody is 1000 rows as subsync sends them: a dozen fields each, one custom field.
func bulkBody(offset int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range MaxBulkRows {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"email":"person%d@example.com","firstname":"Kari","lastname":"Nordmann","address":"Storgata %d",`+
			`"zip":"0150","city":"Oslo","phone":"+47%08d","company":"ACME AS","birthday":"1980-05-17","gender":"female",`+
			`"SAMTYKKEEPOST":"1","EXTRA1":"%d"}`, offset+i, i, offset+i, i)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func benchBulk(b *testing.B, fresh bool) {
	e := New()
	e.CreateList("L")
	e.CreateCustomField("Score", "number")
	bodies := [][]byte{bulkBody(0)}
	b.SetBytes(int64(len(bodies[0])))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		body := bodies[0]
		if fresh {
			b.StopTimer()
			body = bulkBody((i + 1) * MaxBulkRows)
			b.StartTimer()
		}
		req := httptest.NewRequest("POST", V2Prefix+"/subscribers/bulkinsert?subscriber_list_id=1", bytes.NewReader(body))
		req.SetBasicAuth(DefaultUser, DefaultKey)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkBulkInsert measures the emulator's CPU for one 1000-row bulkinsert, without the network.
func BenchmarkBulkInsert(b *testing.B) {
	b.Run("new", func(b *testing.B) { benchBulk(b, true) })
	b.Run("resend", func(b *testing.B) { benchBulk(b, false) })
}

// BenchmarkParseBulk measures the parsing and validation, without applying.
func BenchmarkParseBulk(b *testing.B) {
	e := New()
	e.CreateCustomField("Score", "number")
	defs := e.st.fieldDefs()
	body := string(bulkBody(0))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := parseBulk(body, defs); err != nil {
			b.Fatal(err)
		}
	}
}
