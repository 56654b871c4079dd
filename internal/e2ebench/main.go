// Command e2ebench measures subsync end to end against the raw limit of the emulator.
//
// It generates N contacts (default 1,000,000) as CSV and as XLSX, then for each format:
//
//  1. raw: a child process (this binary again) posts the same rows, mapped and pre-encoded as
//     1000-row bodies before the clock starts, to a fresh emulator with a minimal client
//     (plain net/http, -in-flight requests in flight, 4 by default);
//  2. subsync: starts a child process (this binary again) that opens the jobs runtime on a
//     fresh SQLite database, queues the import and works it in-process (Runtime.Wait), as
//     `subsync import FILE --wait` does, against a fresh emulator with the same settings;
//     the clock runs from queueing to the run's completion (reading, mapping, checkpoints and
//     delta fingerprints included);
//
// and prints rows/s for both, their ratio, the peak RSS (VmHWM) and CPU seconds of the subsync
// process, and the CPU seconds of this process (the emulator, nothing else) during each. With
// -runs N the two are measured in turn N times and the median ratio is printed.
//
// With -queue postgres the subsync process runs on the Postgres queue a fleet uses: every
// measured run gets a database of its own, created on the server of -database-url (default
// TEST_DATABASE_URL, or the local test server) and dropped after it, and the clock then
// includes staging the file into it (EnqueueImport) and the worker copying or restoring it; the column
// "stage s" is the staging. -queue sqlite,postgres measures both in every run, in turn, and
// prints the median time of each and the median of Postgres's time ÷ SQLite's, run by run.
// -raw=false leaves the raw client out (it holds every encoded body in memory: for files of
// ten million rows).
//
// With -cores split (the default on two cores or more) this process, the emulator, runs on
// the first core and each client process on the others, as a service on another machine
// would: the client's own work does not slow the service down, and the ratio is how close
// subsync comes to keeping the service as busy as the minimal client does. -cores shared
// runs every process on every core: the ratio then also counts the CPU the client takes from
// the service.
//
// With -latency the emulator adds that much to every request and the raw client keeps
// -batches-in-flight requests in flight: its rate is the bound the batches in flight set (rows
// per batch × in flight ÷ the round trip it measured). The line below each run prints subsync
// against that bound, subsync's own mean round trip, and how full it kept its batches in
// flight (the sum of its requests' round trips ÷ in flight × the time from its first request
// to its last answer).
//
// With -mode delta it measures delta syncs instead: a sync of the generated CSV file into a
// fresh emulator (every row sent), then, after 1% of the rows changed (their first name), the
// same sync again in a new process on the same database (only the changed rows sent; the rest
// skipped by their fingerprints). It prints rows/s, rows sent, unchanged, and the peak RSS of
// each run, and the second run's time as a share of the first's.
//
// With -mode scale it measures how the rate holds up as the file grows: for each queue, in
// turn, -rows ÷ -scale-rows runs of a -scale-rows file next to one run of -rows, and the large
// run's rate ÷ the small runs' (their rows ÷ their total time), over the same span of time.
//
//	go run ./internal/e2ebench                      # 1,000,000 rows, csv and xlsx
//	go run ./internal/e2ebench -rows 200000 -formats csv
//	go run ./internal/e2ebench -mode delta          # 1,000,000 rows, synced twice, 1% changed
//	go run ./internal/e2ebench -formats csv -runs 3   # the raw limit and subsync in turn, three times
//	go run ./internal/e2ebench -formats csv -queue sqlite,postgres -raw=false -runs 3
//	                                           # the embedded queue and the fleet's, in turn
//	go run ./internal/e2ebench -rows 10000000 -formats csv -raw=false -queue sqlite,postgres
//	go run ./internal/e2ebench -mode scale -rows 10000000 -queue sqlite,postgres -raw=false -runs 3
//	go run ./internal/e2ebench -rows 300000 -formats csv -latency 20ms -batches-in-flight 2 -runs 3
//	                                           # against a service 20 ms away: the bound the window sets
//
// This process, the emulator, collects garbage only when its heap reaches -emulator-memory (8
// GiB by default; it holds every row it was sent): at Go's default pace its collector set the
// pace at ten million rows. SUBSYNC_E2EBENCH_EMU_CPUPROFILE=file writes its CPU profile.
//
// SUBSYNC_E2EBENCH_LOG=info shows the subsync process's log; SUBSYNC_E2EBENCH_CPUPROFILE=file makes the subsync process write a CPU profile;
// SUBSYNC_E2EBENCH_TRACE=file makes it write an execution trace (go tool trace);
// SUBSYNC_E2EBENCH_MEMPROFILE=file makes it write a heap profile taken when the heap in use was
// largest, and print where its memory was (Go runtime classes, anonymous and file-backed pages)
// when its resident set was largest; SUBSYNC_E2EBENCH_GOROUTINES=file (with MEMPROFILE) adds
// the goroutines at that moment.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
)

// fpFlush and memBudget are the -fingerprint-flush and -memory-budget flags, passed on to
// every subsync child.
var (
	fpFlush   int
	memBudget int64
)

// childEnv makes this binary the subsync child; its value is the child's JSON config.
const childEnv = "SUBSYNC_E2EBENCH_CHILD"

const (
	benchUser = "bench-user"
	benchKey  = "bench-key"
)

type childConfig struct {
	SinkURL         string `json:"sink_url"`
	DataDir         string `json:"data_dir"`
	Path            string `json:"path"`
	ListID          int64  `json:"list_id"`
	InFlight        int    `json:"in_flight"`
	BatchesInFlight int    `json:"batches_in_flight"`
	// FingerprintFlush is jobs.Config.FingerprintFlush (0: its default).
	FingerprintFlush int `json:"fingerprint_flush,omitempty"`
	// MemoryBudget is jobs.Config.MemoryBudget (0: its default).
	MemoryBudget int64 `json:"memory_budget,omitempty"`
	// Sync runs a (delta) sync of Path instead of an import.
	Sync bool `json:"sync,omitempty"`
	// DatabaseURL is the Postgres database of the queue; empty: SQLite in DataDir.
	DatabaseURL string `json:"database_url,omitempty"`
}

type childResult struct {
	Rows      int64   `json:"rows"`
	Sent      int64   `json:"sent"`
	Unchanged int64   `json:"unchanged"`
	Seconds   float64 `json:"seconds"` // queued to completed
	// StageSeconds is the part of Seconds spent queueing the job: on Postgres, staging the
	// file into the database.
	StageSeconds float64 `json:"stage_seconds"`
	// TotalSeconds adds stopping the in-process queue client, as `import --wait` returns.
	TotalSeconds float64 `json:"total_seconds"`
	VmHWMkB      int64   `json:"vmhwm_kb"`
	// CPUSeconds is the CPU time (user and system) of the process from queueing to the run's
	// completion: a measure of the work that does not depend on what else the machine runs.
	CPUSeconds float64 `json:"cpu_seconds"`
	// GCCPUSeconds is the share of it the garbage collector took (runtime/metrics' estimate).
	GCCPUSeconds float64 `json:"gc_cpu_seconds"`
	Error        string  `json:"error,omitempty"`
	Requests     int64   `json:"requests"`
	// Bulkinserts, BulkSeconds and BulkSpan are the bulkinsert requests the client made, the
	// sum of their round trips and the time from the first one's start to the last one's end.
	Bulkinserts int64   `json:"bulkinserts"`
	BulkSeconds float64 `json:"bulk_seconds"`
	BulkSpan    float64 `json:"bulk_span"`
	// Timings are the engine's "pipeline timings" (seconds by name; window is its size).
	Timings map[string]float64 `json:"timings,omitempty"`
}

func main() {
	if raw := os.Getenv(rawEnv); raw != "" {
		if err := pinFromEnv(); err != nil {
			fmt.Fprintln(os.Stderr, "e2ebench raw client:", err)
			os.Exit(1)
		}
		os.Exit(rawChild(raw))
	}
	if raw := os.Getenv(childEnv); raw != "" {
		if err := pinFromEnv(); err != nil {
			fmt.Fprintln(os.Stderr, "e2ebench child:", err)
			os.Exit(1)
		}
		jobs.TuneGC() // as the subsync binary does
		os.Exit(child(raw))
	}
	rows := flag.Int("rows", 1_000_000, "contacts to generate")
	formats := flag.String("formats", "csv,xlsx", "formats to measure")
	dir := flag.String("dir", "", "where to keep the generated files (reused when present); default a temporary directory")
	inFlight := flag.Int("in-flight", 4, "HTTP requests in flight, for both clients")
	batches := flag.Int("batches-in-flight", 4, "subsync's batches sent and not yet checkpointed (jobs.Config.BatchesInFlight)")
	flag.IntVar(&fpFlush, "fingerprint-flush", 0, "delta fingerprints a run holds before saving them (jobs.Config.FingerprintFlush); 0: the default")
	flag.Int64Var(&memBudget, "memory-budget", 0, "bytes each of a run's sets that grow with its rows may hold in memory before it spills to a temporary file (jobs.Config.MemoryBudget); 0: the default")
	mode := flag.String("mode", "import", "import (subsync against the raw limit), delta (two syncs, 1% changed) or scale (-rows against runs of -scale-rows over the same span of time)")
	scaleRows := flag.Int("scale-rows", 1_000_000, "scale mode: the rows of the small file, run -rows ÷ -scale-rows times next to each run of -rows")
	flag.DurationVar(&latency, "latency", 0, "added by the emulator to every request, as a service tens of milliseconds away; the raw client then keeps -batches-in-flight requests in flight")
	runs := flag.Int("runs", 1, "import mode: raw limit and subsync measured in turn this many times; the median ratio is printed. Delta mode: the second sync is run this many times, each on a copy of the database the first left")
	cores := flag.String("cores", "split", "import mode: split (the emulator on one core, each client process on the others, as a service on another machine) or shared (every process on every core)")
	queue := flag.String("queue", queueSQLite, "import mode: the queue subsync runs on: sqlite, postgres (a fresh database on -database-url's server for every run, the file staged into it), or sqlite,postgres (both, in turn, in every run)")
	flag.StringVar(&databaseURL, "database-url", databaseURLDefault(), "the Postgres server -queue postgres creates its databases on (and drops them after)")
	flag.BoolVar(&withRaw, "raw", true, "import mode: measure the raw client too (it holds every encoded body in memory: -raw=false for very large files)")
	emuMemory := flag.Int64("emulator-memory", 8<<30, "bytes this process (the emulator) lets its heap grow to before it collects garbage; 0: Go's default collector (GOGC)")
	flag.Parse()
	if *emuMemory > 0 {
		// The emulator keeps every row it was sent: at ten million rows, collecting at Go's
		// default pace spent about 45% of its core marking that heap again and again, so its
		// own collector set the pace of both clients (the raw one's rate fell to 0.77 of its
		// rate at a million). A service on another machine does not slow down so; the
		// emulator collects only when its heap reaches -emulator-memory. The clients'
		// processes keep their own settings.
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(*emuMemory)
	}
	if prof := os.Getenv("SUBSYNC_E2EBENCH_EMU_CPUPROFILE"); prof != "" {
		f, err := os.Create(prof)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2ebench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	queues, err := parseQueues(*queue)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2ebench:", err)
		os.Exit(2)
	}
	switch *mode {
	case "import", "scale":
		var split *coreSplit
		switch *cores {
		case "split":
			if cs, ok := splitCores(); ok {
				split = &cs
			}
		case "shared":
		default:
			err = fmt.Errorf("-cores %q: want split or shared", *cores)
		}
		switch {
		case err != nil:
		case *mode == "scale":
			err = runScale(*rows, *scaleRows, queues, *dir, *inFlight, *batches, max(1, *runs), split)
		default:
			err = run(*rows, strings.Split(*formats, ","), queues, *dir, *inFlight, *batches, max(1, *runs), split)
		}
	case "delta":
		err = runDelta(*rows, *dir, *inFlight, *batches, *runs)
	default:
		err = fmt.Errorf("-mode %q: want import, delta or scale", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2ebench:", err)
		os.Exit(1)
	}
}

// workDir is dir, or a temporary directory (removed by cleanup) when dir is empty.
func workDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "e2ebench-*")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { _ = os.RemoveAll(tmp) }, nil
}

// contactsFile returns the file of n generated contacts in format in dir, generating it
// unless it is there from an earlier run.
func contactsFile(dir string, n int, format string) (string, error) {
	path := filepath.Join(dir, fmt.Sprintf("contacts-%d.%s", n, format))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	start := time.Now()
	if err := generate(path, format, n); err != nil {
		return "", fmt.Errorf("generate %s: %w", format, err)
	}
	fmt.Printf("generated %s in %s\n", path, time.Since(start).Round(time.Millisecond))
	return path, nil
}

// Flags read by run and subsync.
var (
	databaseURL string // -database-url
	withRaw     bool   // -raw
)

func run(n int, formats, queues []string, dir string, inFlight, batches, runs int, split *coreSplit) error {
	dir, cleanup, err := workDir(dir)
	if err != nil {
		return err
	}
	defer cleanup()
	rawInFlight := inFlight
	if latency > 0 {
		// Under latency the raw client keeps as many requests in flight as subsync may have
		// batches: its rate is rows per batch × in flight ÷ the round trip it measures.
		rawInFlight = batches
	}
	fmt.Printf("e2ebench: %d contacts, raw client %d requests in flight, subsync %d requests and %d batches in flight, latency %s, queue %s, %d run(s)\n",
		n, rawInFlight, inFlight, batches, latency, strings.Join(queues, " and "), runs)
	var clients []int // the client processes' cores; none: shared
	if split != nil {
		fmt.Printf("cores split: %s\n", split)
		clients = split.clients
	} else {
		fmt.Println("cores shared: the emulator and each client process on every core")
	}
	for _, format := range formats {
		path, err := contactsFile(dir, n, format)
		if err != nil {
			return err
		}
		fmt.Printf("\n%-6s %3s %-8s %11s %11s %6s %8s %9s %9s %7s %8s %9s %9s\n", "format", "run", "queue", "raw rows/s", "subsync",
			"ratio", "peak RSS", "raw s", "subsync s", "stage s", "CPU s", "emu CPU s", "raw emu")
		// This process is the emulator and nothing else: both clients are processes of their
		// own, so the emulator's heap (and its garbage collector's work) is the same for both.
		if split != nil {
			if err := pin(split.emulator); err != nil {
				return err
			}
		}
		ratios, bounds, secs := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
		var pgOverSQLite []float64
		for i := range runs {
			var raw rawResult
			if withRaw {
				var err error
				if raw, err = rawPost(path, n, rawInFlight, clients); err != nil {
					return fmt.Errorf("raw %s: %w", format, err)
				}
			}
			for _, q := range queues {
				res, emuCPU, err := subsync(path, dir, q, inFlight, batches, clients)
				if err != nil {
					return fmt.Errorf("subsync %s on %s: %w", format, q, err)
				}
				if res.Sent != int64(n) {
					return fmt.Errorf("subsync %s on %s: sent %d rows, want %d", format, q, res.Sent, n)
				}
				rate := float64(res.Rows) / res.Seconds
				secs[q] = append(secs[q], res.Seconds)
				ratio := "-"
				if withRaw {
					ratios[q] = append(ratios[q], rate/raw.rate)
					ratio = fmt.Sprintf("%.0f%%", 100*rate/raw.rate)
				}
				fmt.Printf("%-6s %3d %-8s %11.0f %11.0f %6s %5.0f MB %9.2f %9.2f %7.2f %8.2f %9.2f %9.2f\n", format, i+1, q, raw.rate, rate,
					ratio, float64(res.VmHWMkB)/1024, raw.secs, res.Seconds, res.StageSeconds, res.CPUSeconds, emuCPU, raw.cpu)
				if latency > 0 && withRaw {
					bound := float64(sink.MaxBatchRows*batches) / raw.roundTrip
					bounds[q] = append(bounds[q], rate/bound)
					printLatency(res, raw, bound, rate, batches)
				}
				printTimings(res)
			}
			if len(queues) == 2 {
				pgOverSQLite = append(pgOverSQLite, secs[queuePostgres][i]/secs[queueSQLite][i])
			}
		}
		for _, q := range queues {
			if runs == 1 && !withRaw {
				continue
			}
			s := secs[q]
			fmt.Printf("%-6s %-8s median of %d: %.2f s (%.0f rows/s)", format, q, runs, median(s), float64(n)/median(s))
			if withRaw {
				fmt.Printf("; ratio to the raw client %.2f", median(ratios[q]))
			}
			if len(bounds[q]) > 0 {
				fmt.Printf("; to the bound: %.2f", median(bounds[q]))
			}
			fmt.Println()
		}
		if len(pgOverSQLite) > 0 {
			fmt.Printf("%-6s postgres ÷ sqlite, time, run by run: %s; median %.2f\n", format, joinFloats(pgOverSQLite), median(pgOverSQLite))
		}
	}
	return nil
}

// printLatency prints the line of a run under -latency: subsync against the bound the
// batches in flight set.
func printLatency(res childResult, raw rawResult, bound, rate float64, batches int) {
	rtt := res.BulkSeconds / float64(res.Bulkinserts)
	fmt.Printf("       latency %s, %d in flight: bound %.0f rows/s (1000 × %d ÷ the raw client's mean round trip %.1f ms; %.0f rows/s with the latency alone); subsync %.2f× the bound\n"+
		"       subsync delivering (first request to last answer, %.2fs): %.0f rows/s, %.2f× the bound; its mean round trip %.1f ms; its batches in flight kept full %.0f%% of that time\n",
		latency, batches, bound, batches, 1000*raw.roundTrip, float64(sink.MaxBatchRows*batches)/latency.Seconds(), rate/bound,
		res.BulkSpan, float64(res.Sent)/res.BulkSpan, float64(res.Sent)/res.BulkSpan/bound,
		1000*rtt, 100*res.BulkSeconds/(float64(batches)*res.BulkSpan))
}

// printTimings prints where the engine's window spent its time.
func printTimings(res childResult) {
	tm := res.Timings
	if tm["total"] <= 0 {
		return
	}
	slots := tm["window"] * tm["total"]
	fmt.Printf("       the engine's %.2fs: its %.0f slots were sending %.0f%%, acknowledged and waiting to be counted %.0f%%, "+
		"counted and waiting for their checkpoint %.0f%%, empty %.0f%% of the time; it waited %.2fs for rows, %.2fs for the window\n",
		tm["total"], tm["window"], 100*tm["slots_sending"]/slots, 100*tm["slots_acked_waiting_to_be_counted"]/slots,
		100*tm["slots_acked_waiting_for_checkpoint"]/slots,
		100*(slots-tm["slots_sending"]-tm["slots_acked_waiting_to_be_counted"]-tm["slots_acked_waiting_for_checkpoint"])/slots,
		tm["waiting_for_rows"], tm["waiting_for_window"])
}

func joinFloats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(s, ", ")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rawResult is one raw run: rows/s, seconds, the mean round trip of a request and the CPU
// seconds of the emulator meanwhile.
type rawResult struct {
	rate, secs, roundTrip, cpu float64
}

var (
	firstNames = []string{"Ola", "Kari", "Per", "Anne", "Lars", "Ingrid", "Jonas", "Sofie", "Emil", "Nora", "Håkon", "Åse"}
	lastNames  = []string{"Nordmann", "Hansen", "Johansen", "Olsen", "Larsen", "Andersen", "Pedersen", "Nilsen", "Kristiansen", "Jensen"}
	cities     = []string{"Oslo", "Bergen", "Trondheim", "Stavanger", "Tromsø", "Kristiansand", "Drammen", "Bodø"}
)

// contact returns the cells of contact i: E-post, Fornavn, Etternavn, Adresse, Postnummer,
// Poststed, Mobil.
func contact(i int) []string {
	return []string{
		fmt.Sprintf("kontakt%d@example.com", i),
		firstNames[i%len(firstNames)],
		lastNames[(i/7)%len(lastNames)],
		fmt.Sprintf("Storgata %d", i%200+1),
		fmt.Sprintf("%04d", i%9000+1000),
		cities[(i/3)%len(cities)],
		fmt.Sprintf("9%07d", i%10_000_000),
	}
}

var header = []string{"E-post", "Fornavn", "Etternavn", "Adresse", "Postnummer", "Poststed", "Mobil"}

func generate(path, format string, n int) error {
	tmp := filepath.Join(filepath.Dir(path), "tmp-"+filepath.Base(path)) // keeps the extension excelize checks
	switch format {
	case "csv":
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		fmt.Fprintln(w, strings.Join(header, ","))
		for i := 1; i <= n; i++ {
			fmt.Fprintln(w, strings.Join(contact(i), ","))
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	case "xlsx":
		f := excelize.NewFile()
		sw, err := f.NewStreamWriter("Sheet1")
		if err != nil {
			return err
		}
		row := make([]any, len(header))
		for i, h := range header {
			row[i] = h
		}
		if err := sw.SetRow("A1", row); err != nil {
			return err
		}
		for i := 1; i <= n; i++ {
			for j, v := range contact(i) {
				row[j] = v
			}
			cell, _ := excelize.CoordinatesToCellName(1, i+1)
			if err := sw.SetRow(cell, row); err != nil {
				return err
			}
		}
		if err := sw.Flush(); err != nil {
			return err
		}
		if err := f.SaveAs(tmp); err != nil {
			return err
		}
		_ = f.Close()
	default:
		return fmt.Errorf("format %q: want csv or xlsx", format)
	}
	return os.Rename(tmp, path)
}

// encode maps the file with subsync's own mapping (automatic, by column names) and encodes
// the payloads as 1000-row bulkinsert bodies: the raw client sends exactly what subsync sends.
// It returns the bodies and how many rows they hold.
func encode(path string) ([][]byte, int, error) {
	ctx := context.Background()
	r, err := sources.Open(ctx, sources.Config{Path: path})
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	spec, _ := mapping.Spec{}.WithAuto(r.Header())
	m, err := mapping.Compile(spec, r.Header(), mapping.Fields{})
	if err != nil {
		return nil, 0, err
	}
	var bodies [][]byte
	var body []byte
	rows, total := 0, 0
	flush := func() {
		if rows > 0 {
			bodies = append(bodies, append(body, ']'))
		}
		body, rows = nil, 0
	}
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		row, rej := m.Map(rec)
		if rej != nil {
			return nil, 0, rej
		}
		total++
		if rows == 0 {
			body = append(make([]byte, 0, 200*sink.MaxBatchRows), '[')
		} else {
			body = append(body, ',')
		}
		body = row.Sub.AppendJSON(body)
		if rows++; rows == sink.MaxBatchRows {
			flush()
		}
	}
	flush()
	return bodies, total, nil
}

// latency is what the emulator adds to every request (-latency).
var latency time.Duration

// emulator starts a fresh emulator on a local port, adding latency to every request.
//
// The emulator before it is collected first: every measured run starts with the same heap in
// this process, so the collector's work during a run (the emulator holds every row it was sent)
// does not depend on which run came before.
func emulator() (*sinktest.Emulator, string, func(), error) {
	debug.FreeOSMemory()
	emu := sinktest.New(sinktest.WithCredentials(benchUser, benchKey), sinktest.WithFaults(sinktest.Faults{Latency: latency}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = emu.Serve(ctx, ln)
		close(done)
	}()
	return emu, "http://" + ln.Addr().String() + sinktest.V2Prefix, func() { cancel(); <-done }, nil
}

// rawPost runs the raw client (a process of its own, on cpus if any) against a fresh
// emulator.
func rawPost(path string, n, inFlight int, cpus []int) (rawResult, error) {
	emu, base, stop, err := emulator()
	if err != nil {
		return rawResult{}, err
	}
	defer stop()
	list := emu.CreateList("raw")
	cpu0 := cpuSeconds()
	res, err := runRaw(rawConfig{URL: base + "/subscribers/bulkinsert?subscriber_list_id=" + strconv.FormatInt(list, 10),
		Path: path, InFlight: inFlight}, cpus)
	emuCPU := cpuSeconds() - cpu0 // this process serves only the emulator meanwhile (and starts the client)
	if err != nil {
		return rawResult{}, err
	}
	if got := emu.ListMemberCount(list); got != n || res.Rows != n {
		return rawResult{}, fmt.Errorf("emulator holds %d subscribers, the client sent %d, want %d", got, res.Rows, n)
	}
	return rawResult{rate: float64(n) / res.Seconds, secs: res.Seconds, roundTrip: res.RoundTrip, cpu: emuCPU}, nil
}

// subsync runs the import in a child process (on cpus, if any) and returns what it measured
// and the CPU seconds of the emulator meanwhile.
func subsync(path, dir, queue string, inFlight, batches int, cpus []int) (childResult, float64, error) {
	emu, base, stop, err := emulator()
	if err != nil {
		return childResult{}, 0, err
	}
	defer stop()
	list := emu.CreateList("subsync")
	dataDir, err := os.MkdirTemp(dir, "data-*")
	if err != nil {
		return childResult{}, 0, err
	}
	defer os.RemoveAll(dataDir)
	if prof := os.Getenv("SUBSYNC_E2EBENCH_EMUPROFILE"); prof != "" {
		// The emulator's CPU profile while it serves subsync (this process), to set beside
		// the child's (SUBSYNC_E2EBENCH_CPUPROFILE).
		f, err := os.Create(prof)
		if err != nil {
			return childResult{}, 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return childResult{}, 0, err
		}
		defer pprof.StopCPUProfile()
	}
	cfg := childConfig{SinkURL: base, DataDir: dataDir, Path: path, ListID: list, InFlight: inFlight, BatchesInFlight: batches}
	if queue == queuePostgres {
		dbURL, drop, err := freshDatabase(databaseURL)
		if err != nil {
			return childResult{}, 0, err
		}
		defer drop()
		cfg.DatabaseURL = dbURL
	}
	cpu0 := cpuSeconds()
	res, err := runChild(cfg, cpus)
	emuCPU := cpuSeconds() - cpu0 // this process serves only the emulator meanwhile (and starts the child)
	if err != nil {
		return res, 0, err
	}
	if got := emu.ListMemberCount(list); int64(got) != res.Sent {
		return res, 0, fmt.Errorf("emulator holds %d subscribers, the run says %d sent", got, res.Sent)
	}
	return res, emuCPU, nil
}

// child is the subsync process: the jobs runtime on a fresh SQLite database, one import,
// worked in-process.
func child(raw string) int {
	var c childConfig
	res := childResult{}
	defer func() {
		res.VmHWMkB = vmHWM()
		_ = json.NewEncoder(os.Stdout).Encode(res)
	}()
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		res.Error = err.Error()
		return 0
	}
	if prof := os.Getenv("SUBSYNC_E2EBENCH_CPUPROFILE"); prof != "" {
		f, err := os.Create(prof)
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if tr := os.Getenv("SUBSYNC_E2EBENCH_TRACE"); tr != "" {
		f, err := os.Create(tr)
		if err == nil {
			_ = trace.Start(f)
			defer trace.Stop()
		}
	}
	if prof := os.Getenv("SUBSYNC_E2EBENCH_MEMPROFILE"); prof != "" {
		stop := peakHeapProfile(prof)
		defer stop()
	}
	ctx := context.Background()
	var bulk bulkStats
	cfg := jobs.Config{
		DatabaseURL: c.DatabaseURL, DataDir: c.DataDir, BatchesInFlight: c.BatchesInFlight, PollInterval: 25 * time.Millisecond,
		FingerprintFlush: c.FingerprintFlush, MemoryBudget: c.MemoryBudget,
		Logger: slog.New(&timingsHandler{Handler: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}), into: &res.Timings}),
		Sink: sink.Config{BaseURL: c.SinkURL, UserID: benchUser, APIKey: benchKey, RequestsPerSecond: -1,
			MaxInFlight: c.InFlight, Observer: bulk.observe},
	}
	if c.Sync {
		cfg.Syncs = []jobs.SyncSpec{{Name: "bench", ListID: c.ListID, Source: sources.Config{Path: c.Path}}}
	}
	rt, err := jobs.Open(ctx, cfg)
	if err != nil {
		res.Error = err.Error()
		return 0
	}
	defer rt.Close()
	start, cpu0, gc0 := time.Now(), cpuSeconds(), gcCPUSeconds()
	var id int64
	if c.Sync {
		id, err = rt.EnqueueSync(ctx, "bench", false)
	} else {
		id, err = rt.EnqueueImport(ctx, jobs.ImportArgs{Path: c.Path, ListID: c.ListID})
	}
	res.StageSeconds = time.Since(start).Seconds()
	if err != nil {
		res.Error = err.Error()
		return 0
	}
	run, err := rt.Wait(ctx, id, func(p jobs.Progress) {
		if p.State == "completed" && res.Seconds == 0 {
			res.Seconds = time.Since(start).Seconds()
			res.CPUSeconds = cpuSeconds() - cpu0
			res.GCCPUSeconds = gcCPUSeconds() - gc0
		}
	})
	res.TotalSeconds = time.Since(start).Seconds()
	if err != nil {
		res.Error = err.Error()
		return 0
	}
	res.Rows, res.Sent, res.Unchanged, res.Requests = run.Counts.Read, run.Counts.Sent, run.Counts.Unchanged, run.Counts.Requests
	res.Bulkinserts, res.BulkSeconds, res.BulkSpan = bulk.result()
	return 0
}

// timingsHandler passes records on to Handler and keeps the engine's "pipeline timings".
type timingsHandler struct {
	slog.Handler
	into *map[string]float64
}

func (h *timingsHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *timingsHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "pipeline timings" {
		m := map[string]float64{}
		r.Attrs(func(a slog.Attr) bool {
			switch a.Value.Kind() {
			case slog.KindDuration:
				m[a.Key] = a.Value.Duration().Seconds()
			case slog.KindInt64:
				m[a.Key] = float64(a.Value.Int64())
			}
			return true
		})
		*h.into = m
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *timingsHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &timingsHandler{Handler: h.Handler.WithAttrs(as), into: h.into}
}

func (h *timingsHandler) WithGroup(name string) slog.Handler {
	return &timingsHandler{Handler: h.Handler.WithGroup(name), into: h.into}
}

// bulkStats sums the round trips of the bulkinsert requests the client makes.
type bulkStats struct {
	mu          sync.Mutex
	n           int64
	sum         time.Duration
	first, last time.Time
}

func (b *bulkStats) observe(ri sink.ResponseInfo) {
	if ri.Route != "/subscribers/bulkinsert" {
		return
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == 0 {
		b.first = now.Add(-ri.Duration)
	}
	b.n++
	b.sum += ri.Duration
	b.last = now
}

func (b *bulkStats) result() (int64, float64, float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n, b.sum.Seconds(), b.last.Sub(b.first).Seconds()
}

// runDelta syncs a generated CSV file of n contacts twice into one emulator, each run in its
// own process on the same SQLite database, the second time with 1% of the rows changed. With
// runs > 1 the second sync is run that many times, each on a copy of the database as the
// first sync left it.
func runDelta(n int, dir string, inFlight, batches, runs int) error {
	dir, cleanup, err := workDir(dir)
	if err != nil {
		return err
	}
	defer cleanup()
	budget := "default"
	if memBudget > 0 {
		budget = strconv.FormatInt(memBudget, 10) + " bytes"
	}
	fmt.Printf("e2ebench -mode delta: %d contacts synced twice (1%% changed), %d requests in flight, batches in flight %d, memory budget %s\n",
		n, inFlight, batches, budget)
	path := filepath.Join(dir, fmt.Sprintf("delta-%d.csv", n))
	start := time.Now()
	if err := generate(path, "csv", n); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	fmt.Printf("generated %s in %s\n", path, time.Since(start).Round(time.Millisecond))
	emu, base, stop, err := emulator()
	if err != nil {
		return err
	}
	defer stop()
	list := emu.CreateList("delta")
	dataDir, err := os.MkdirTemp(dir, "data-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	cfg := childConfig{SinkURL: base, DataDir: dataDir, Path: path, ListID: list, InFlight: inFlight,
		BatchesInFlight: batches, Sync: true}

	first, err := runChild(cfg, nil)
	if err != nil {
		return fmt.Errorf("first sync: %w", err)
	}
	if first.Sent != int64(n) {
		return fmt.Errorf("first sync: sent %d rows, want %d", first.Sent, n)
	}
	snapshot := dataDir + ".first"
	if runs > 1 {
		if err := copyDir(dataDir, snapshot); err != nil {
			return err
		}
		defer os.RemoveAll(snapshot)
	}
	changed, err := changeRows(path, 100)
	if err != nil {
		return fmt.Errorf("change rows: %w", err)
	}
	var seconds []childResult
	for r := range max(runs, 1) {
		if r > 0 {
			if err := os.RemoveAll(dataDir); err != nil {
				return err
			}
			if err := copyDir(snapshot, dataDir); err != nil {
				return err
			}
		}
		second, err := runChild(cfg, nil)
		if err != nil {
			return fmt.Errorf("second sync: %w", err)
		}
		if second.Sent != int64(changed) || second.Unchanged != int64(n-changed) {
			return fmt.Errorf("second sync: sent %d and %d unchanged, want %d and %d", second.Sent, second.Unchanged, changed, n-changed)
		}
		seconds = append(seconds, second)
	}
	// Every changed row reached the service.
	for i := 100; i <= n; i += 100 {
		s, ok := emu.SubscriberByEmail(contact(i)[0])
		if !ok || !strings.HasPrefix(s.Fields["firstname"], "Endret") {
			return fmt.Errorf("second sync: contact %d was not updated", i)
		}
	}
	fmt.Printf("\n%-14s %12s %10s %10s %10s %10s %12s %8s %15s\n", "run", "rows/s", "sent", "unchanged", "seconds", "engine s", "CPU seconds", "of GC", "peak RSS")
	row := func(name string, res childResult) {
		fmt.Printf("%-14s %12.0f %10d %10d %10.2f %10.2f %12.2f %8.2f %12.0f MB\n", name, float64(res.Rows)/res.Seconds,
			res.Sent, res.Unchanged, res.Seconds, res.Timings["total"], res.CPUSeconds, res.GCCPUSeconds, float64(res.VmHWMkB)/1024)
	}
	row("first sync", first)
	var shares []float64
	for _, second := range seconds {
		row("second sync", second)
		shares = append(shares, second.Seconds/first.Seconds)
	}
	if len(seconds) == 1 {
		second := seconds[0]
		fmt.Printf("\nthe second sync took %.1f%% of the first's time (queued to completed), %.0f%% of its CPU time\n",
			100*second.Seconds/first.Seconds, 100*second.CPUSeconds/first.CPUSeconds)
		return nil
	}
	slices.Sort(shares)
	fmt.Printf("\nthe second syncs took %.1f%% of the first's time (queued to completed), median of %d (%.1f%% to %.1f%%)\n",
		100*shares[len(shares)/2], len(shares), 100*shares[0], 100*shares[len(shares)-1])
	return nil
}

// copyDir copies the files of directory from into a new directory to.
func copyDir(from, to string) error {
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue // data_dir/tmp: what a run kept beyond its memory budget, gone once it ended
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// changeRows gives every step-th contact of the CSV file a new first name; it returns how
// many rows changed.
func changeRows(path string, step int) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var out bytes.Buffer
	out.Grow(len(data) + len(data)/step)
	changed := 0
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		if i > 0 && i%step == 0 && len(line) > 0 {
			cells := strings.Split(string(line), ",")
			cells[1] = "Endret" + cells[1]
			line = []byte(strings.Join(cells, ","))
			changed++
		}
		out.Write(line)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out.Bytes(), 0o600); err != nil {
		return 0, err
	}
	return changed, os.Rename(tmp, path)
}

// runChild runs one subsync child process (on cpus, if any) and returns what it measured.
func runChild(c childConfig, cpus []int) (childResult, error) {
	c.FingerprintFlush, c.MemoryBudget = fpFlush, memBudget
	raw, _ := json.Marshal(c)
	cmd, err := childCommand(cpus, childEnv+"="+string(raw))
	if err != nil {
		return childResult{}, err
	}
	out, err := cmd.Output()
	if err != nil {
		return childResult{}, fmt.Errorf("child: %w", err)
	}
	var res childResult
	if err := json.Unmarshal(out, &res); err != nil {
		return childResult{}, fmt.Errorf("child output %q: %w", out, err)
	}
	if res.Error != "" {
		return res, errors.New(res.Error)
	}
	return res, nil
}

// logLevel is the subsync process's log level: SUBSYNC_E2EBENCH_LOG (debug, info, warn), warn by default.
func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("SUBSYNC_E2EBENCH_LOG"))); err != nil {
		return slog.LevelWarn
	}
	return l
}

// cpuSeconds is the CPU time (user and system) this process used so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// gcCPUSeconds is the CPU time the garbage collector used so far (an estimate of the runtime's).
func gcCPUSeconds() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return s[0].Value.Float64()
}

// vmHWM is the peak resident set size of this process in kB (Linux).
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return v
		}
	}
	return 0
}

// peakHeapProfile samples the heap in use every 50 ms and writes a heap profile to path each
// time it reaches a new peak; the returned func stops sampling and prints, to stderr, where
// the process's memory was when its resident set was largest: the Go runtime's classes
// (runtime/metrics) and the kernel's anonymous and file-backed resident pages.
func peakHeapProfile(path string) func() {
	all := metrics.All()
	samples := make([]metrics.Sample, 0, len(all))
	for _, d := range all {
		if strings.HasPrefix(d.Name, "/memory/classes/") || d.Name == "/gc/heap/goal:bytes" {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	var peakRSS int64
	var atPeak []string
	go func() {
		defer close(finished)
		var peakHeap uint64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(samples)
			status := procStatus()
			if rss := status["VmRSS"]; rss > peakRSS {
				peakRSS = rss
				atPeak = atPeak[:0]
				for _, k := range []string{"VmRSS", "RssAnon", "RssFile"} {
					atPeak = append(atPeak, fmt.Sprintf("%-45s %8d kB", k, status[k]))
				}
				if g := os.Getenv("SUBSYNC_E2EBENCH_GOROUTINES"); g != "" {
					if f, err := os.Create(g); err == nil {
						_ = pprof.Lookup("goroutine").WriteTo(f, 1)
						_ = f.Close()
					}
				}
				for _, m := range samples {
					if v := m.Value.Uint64(); v >= 512<<10 {
						atPeak = append(atPeak, fmt.Sprintf("%-45s %8d kB", m.Name, v>>10))
					}
				}
			}
			for _, m := range samples {
				if m.Name != "/memory/classes/heap/objects:bytes" {
					continue
				}
				if v := m.Value.Uint64(); v > peakHeap+peakHeap/20 {
					peakHeap = v
					if f, err := os.Create(path); err == nil {
						_ = pprof.Lookup("heap").WriteTo(f, 0)
						_ = f.Close()
					}
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		fmt.Fprintf(os.Stderr, "e2ebench child: at the largest resident set sampled:\n  %s\n", strings.Join(atPeak, "\n  "))
	}
}

// procStatus is /proc/self/status's kB figures by name (Linux).
func procStatus() map[string]int64 {
	out := map[string]int64{}
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasSuffix(rest, "kB") {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(rest, "kB")), 10, 64)
		if err == nil {
			out[name] = v
		}
	}
	return out
}
