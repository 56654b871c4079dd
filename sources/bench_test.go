package sources_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/subsync/subsync/sources"
)

// BenchmarkRead reads generated contact files of 100,000 and 1,000,000 rows, CSV and XLSX,
// and reports rows/s, peak-heap-MB: the largest heap in use (live and not yet collected
// objects, runtime/metrics /memory/classes/heap/objects:bytes) seen by a goroutine that
// samples it every millisecond while the file is read, after collecting garbage at the start,
// and peak-live-MB: the largest heap the collector found live (/gc/heap/live:bytes) in those
// samples. Memory must not grow with the file: peak-heap-MB at 1,000,000 rows stays within
// 1.2 times the figure at 100,000. With a heap of a few MB, peak-heap-MB is mostly the
// collector's minimum goal (4 MB) and moves by a megabyte with when it runs (-count 4 gives
// the spread); peak-live-MB does not depend on that. The kind=excelize sub-benchmarks read the same workbooks with
// excelize's own row iterator (as the XLSX reader did before it streamed worksheets itself),
// for the comparison in the same run:
//
//	go test -run '^$' -bench 'BenchmarkRead/kind=(xlsx|excelize)/' -benchtime 1x ./sources/
//
// The files are generated once per run into a temporary directory (the workbooks with
// excelize's StreamWriter: inline strings, a date and a 0000-formatted postcode column) and
// shared by the sub-benchmarks. excelize's row iterator takes minutes over the
// 1,000,000-row workbook (it decodes each cell with encoding/xml); the rest takes about a
// minute on 2 cores.
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	files := map[string]string{}
	file := func(b *testing.B, kind string, rows int) string {
		key := fmt.Sprintf("%s-%d", kind, rows)
		if path, ok := files[key]; ok {
			return path
		}
		path := filepath.Join(dir, key+"."+kind)
		start := time.Now()
		if kind == sources.KindCSV {
			generateCSV(b, path, rows)
		} else {
			generateXLSX(b, path, rows)
		}
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("generated %s: %d rows, %.1f MB, in %s", filepath.Base(path), rows, float64(st.Size())/1e6, time.Since(start).Round(time.Millisecond))
		files[key] = path
		return path
	}
	for _, kind := range []string{sources.KindCSV, sources.KindXLSX, excelizeRows} {
		for _, rows := range []int{100_000, 1_000_000} {
			b.Run(fmt.Sprintf("kind=%s/rows=%d", kind, rows), func(b *testing.B) {
				fileKind, read := kind, readCounting
				if kind == excelizeRows {
					fileKind, read = sources.KindXLSX, readExcelize
				}
				path := file(b, fileKind, rows)
				var peak heapPeak
				b.ResetTimer()
				for range b.N {
					p := read(b, path, rows)
					peak.heap, peak.live = max(peak.heap, p.heap), max(peak.live, p.live)
				}
				b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(peak.heap)/(1<<20), "peak-heap-MB")
				b.ReportMetric(float64(peak.live)/(1<<20), "peak-live-MB")
			})
		}
	}
}

// excelizeRows names the sub-benchmarks that read the workbooks with excelize's own row
// iterator, as the XLSX reader did before it streamed worksheets itself.
const excelizeRows = "excelize"

// readExcelize reads every row of the workbook at path with excelize's row iterator, checks
// the count of data rows, and returns the peak heap.
func readExcelize(b *testing.B, path string, want int) heapPeak {
	runtime.GC()
	runtime.GC()
	stop := sampleHeap()
	f, err := excelize.OpenFile(path, excelize.Options{UnzipXMLSizeLimit: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	rows, err := f.Rows("Sheet1")
	if err != nil {
		b.Fatal(err)
	}
	n := -1 // the header
	for rows.Next() {
		if _, err := rows.Columns(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := errors.Join(rows.Error(), rows.Close(), f.Close()); err != nil {
		b.Fatal(err)
	}
	peak := stop()
	if n != want {
		b.Fatalf("read %d rows, want %d", n, want)
	}
	return peak
}

// readCounting reads every row of path, checks the count, and returns the peak heap.
func readCounting(b *testing.B, path string, want int) heapPeak {
	// Twice: garbage that generating the file left behind objects with finalizers (excelize's
	// temporary files) survives the first collection.
	runtime.GC()
	runtime.GC()
	stop := sampleHeap()
	r, err := sources.Open(context.Background(), sources.Config{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for {
		_, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	peak := stop()
	if n != want {
		b.Fatalf("read %d rows, want %d", n, want)
	}
	return peak
}

// heapPeak is the largest heap in use and the largest heap found live seen while reading.
type heapPeak struct{ heap, live uint64 }

// sampleHeap samples the heap every millisecond until the returned function is called;
// that returns the peaks.
func sampleHeap() func() heapPeak {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	var (
		mu   sync.Mutex
		peak heapPeak
	)
	read := func() {
		metrics.Read(sample)
		mu.Lock()
		peak.heap = max(peak.heap, sample[0].Value.Uint64())
		peak.live = max(peak.live, sample[1].Value.Uint64())
		mu.Unlock()
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() heapPeak {
		close(done)
		<-stopped
		read()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// benchContact is row i of a generated contact list.
func benchContact(i int) (email, first, last string, phone int64, postcode, city string, born time.Time) {
	return "person" + strconv.Itoa(i) + "@example.com", "Kari", "Nordmann-" + strconv.Itoa(i%977),
		4790000000 + int64(i), fmt.Sprintf("%04d", i%10000), "Tromsø",
		time.Date(1950+i%50, time.Month(1+i%12), 1+i%28, 0, 0, 0, 0, time.UTC)
}

func generateCSV(b *testing.B, path string, rows int) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprint(w, "email;first_name;last_name;phone;postcode;city;birthday\r\n")
	for i := range rows {
		email, first, last, phone, postcode, city, born := benchContact(i)
		fmt.Fprintf(w, "%s;%s;%s;%d;%s;%s;%s\r\n", email, first, last, phone, postcode, city, born.Format("2006-01-02"))
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

func generateXLSX(b *testing.B, path string, rows int) {
	f := excelize.NewFile()
	defer f.Close()
	date, err := f.NewStyle(&excelize.Style{NumFmt: 14})
	if err != nil {
		b.Fatal(err)
	}
	postcode, err := f.NewStyle(&excelize.Style{CustomNumFmt: ptr("0000")})
	if err != nil {
		b.Fatal(err)
	}
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		b.Fatal(err)
	}
	if err := sw.SetRow("A1", []any{"email", "first_name", "last_name", "phone", "postcode", "city", "birthday"}); err != nil {
		b.Fatal(err)
	}
	row := make([]any, 7)
	for i := range rows {
		email, first, last, phone, code, city, born := benchContact(i)
		n, _ := strconv.Atoi(code)
		row[0], row[1], row[2], row[3] = email, first, last, phone
		row[4] = excelize.Cell{StyleID: postcode, Value: n}
		row[5], row[6] = city, excelize.Cell{StyleID: date, Value: born}
		cell, _ := excelize.CoordinatesToCellName(1, i+2)
		if err := sw.SetRow(cell, row); err != nil {
			b.Fatal(err)
		}
	}
	if err := sw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.SaveAs(path); err != nil {
		b.Fatal(err)
	}
}
