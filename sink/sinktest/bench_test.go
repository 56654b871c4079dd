package sinktest

import (
	"testing"
)

// bulkBody is 1000 rows as subsync sends them: a dozen fields each, one custom field.
func bulkBody(offset int) []byte { return appendBulkBody(nil, offset) }

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
		postBulk(b, e, body)
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
