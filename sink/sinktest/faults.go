package sinktest

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// Faults describes the failures the Emulator injects. The zero value injects none.
//
// Each request draws two numbers from a math/rand/v2 source seeded with Seed, whatever the
// settings, so the same Seed and the same sequence of requests give the same faults. One draw u
// picks the fault: u < ErrorRate is a 5xx; below ErrorRate+TooManyRate a 429; below
// ErrorRate+TooManyRate+DropRate a drop. The other picks the 5xx code and whether its body is
// JSON or an HTML page. The MaxRPS cap is checked after the draws and wins over them.
//
// A 5xx, a 429 and the MaxRPS cap are decided before the request is looked at, so they
// change nothing in the store. A drop is decided before but executed after the effect: the
// request is applied, then the response is cut off mid-body and the connection closed, as
// when a connection dies on the way back. That is what makes a client's at-least-once
// delivery real.
type Faults struct {
	// Seed seeds the random source of the fault decisions.
	Seed int64
	// Latency is added to every request. A request whose context ends meanwhile is not applied.
	Latency time.Duration
	// ErrorRate is the fraction of requests answered 500, 502 or 503.
	ErrorRate float64
	// TooManyRate is the fraction of requests answered 429 with Retry-After.
	TooManyRate float64
	// RetryAfter is the Retry-After of a random 429; default 1s. The header carries whole
	// seconds, at least 1.
	RetryAfter time.Duration
	// MaxRPS caps the requests per second (a token bucket with a burst of max(1, MaxRPS)).
	// A request over the cap is answered 429 with a Retry-After of the wait for the next token,
	// rounded up to whole seconds. 0 means no cap.
	MaxRPS float64
	// DropRate is the fraction of requests whose connection is closed mid-response.
	DropRate float64
}

// Fault names as recorded in Request.Fault.
const (
	faultDrop     = "drop"
	fault429      = "429"
	faultMaxRPS   = "max-rps"
	faultCanceled = "canceled"
)

// SetFaults replaces the fault injection and restarts its random source from f.Seed.
func (e *Emulator) SetFaults(f Faults) {
	e.fmu.Lock()
	defer e.fmu.Unlock()
	e.faults = f
	e.rng = rand.New(rand.NewPCG(uint64(f.Seed), uint64(f.Seed)^0x9e3779b97f4a7c15))
	e.limiter = nil
	if f.MaxRPS > 0 {
		e.limiter = rate.NewLimiter(rate.Limit(f.MaxRPS), max(1, int(f.MaxRPS)))
	}
}

type decision struct {
	kind       string // "" = none; "500", "502", "503", fault429, faultMaxRPS, faultDrop
	code       int
	html       bool
	retryAfter time.Duration
	latency    time.Duration
}

var errorCodes = [...]int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable}

// decide draws the fault of one request arriving at now (real time).
func (e *Emulator) decide(now time.Time) decision {
	e.fmu.Lock()
	defer e.fmu.Unlock()
	f := e.faults
	d := decision{latency: f.Latency}
	u, v := e.rng.Float64(), e.rng.Float64()
	switch {
	case u < f.ErrorRate:
		i := min(int(v*6), 5)
		d.kind, d.code, d.html = "", errorCodes[i/2], i%2 == 1
		d.kind = strconv.Itoa(d.code)
	case u < f.ErrorRate+f.TooManyRate:
		d.kind, d.code, d.retryAfter = fault429, http.StatusTooManyRequests, orDefault(f.RetryAfter, time.Second)
	case u < f.ErrorRate+f.TooManyRate+f.DropRate:
		d.kind = faultDrop
	}
	if e.limiter != nil {
		r := e.limiter.ReserveN(now, 1)
		if wait := r.DelayFrom(now); wait > 0 {
			r.CancelAt(now)
			d.kind, d.code, d.retryAfter = faultMaxRPS, http.StatusTooManyRequests, wait
		}
	}
	return d
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func writeFault(w http.ResponseWriter, d decision) {
	if d.code == http.StatusTooManyRequests {
		secs := max(1, int64(math.Ceil(d.retryAfter.Seconds())))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		writeStatus(w, d.code, "429 Too many requests")
		return
	}
	status := strconv.Itoa(d.code) + " " + http.StatusText(d.code)
	if d.html {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(d.code)
		_, _ = w.Write([]byte("<html>\r\n<head><title>" + status + "</title></head>\r\n<body>\r\n<center><h1>" +
			status + "</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"))
		return
	}
	writeStatus(w, d.code, status)
}
