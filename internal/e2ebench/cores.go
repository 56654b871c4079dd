package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// With -cores split (the default on a machine of two cores or more) the emulator (this
// process) runs on the first core and each client process (the raw client, subsync) on the
// others, as a service on another machine would: a client's own work then cannot slow the
// service down, and the ratio measures how close subsync comes to keeping the service as busy
// as the minimal client does. With -cores shared every process runs on every core, as
// before: the emulator and the client then compete for the cores, and the ratio also
// measures how much CPU the client takes from the service.

// cpusEnv tells a child process which cores to run on ("1", "1,2,3").
const cpusEnv = "SUBSYNC_E2EBENCH_CPUS"

// rawEnv makes this binary the raw client; its value is the client's JSON config.
const rawEnv = "SUBSYNC_E2EBENCH_RAW"

// coreSplit is the cores the emulator and the clients run on (-cores split).
type coreSplit struct {
	emulator, clients []int
}

// splitCores gives the emulator the first core of the ones this process may run on and the
// clients the rest; ok is false on a single core.
func splitCores() (coreSplit, bool) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return coreSplit{}, false
	}
	var cpus []int
	for c := range 1024 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return coreSplit{}, false
	}
	return coreSplit{emulator: cpus[:1], clients: cpus[1:]}, true
}

func (s coreSplit) String() string {
	return fmt.Sprintf("the emulator on core %s, each client process on core %s", joinInts(s.emulator), joinInts(s.clients))
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// pin makes every thread of this process (and the threads they start) run on cpus only, and
// the Go scheduler use as many Ps as cores.
func pin(cpus []int) error {
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		set.Set(c)
	}
	done := map[int]bool{}
	for { // threads started meanwhile by a thread not yet pinned are caught by the next pass
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("pin to cores %s: %w", joinInts(cpus), err)
		}
		fresh := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("pin thread %d to cores %s: %w", tid, joinInts(cpus), err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			break
		}
	}
	runtime.GOMAXPROCS(len(cpus))
	return nil
}

// pinFromEnv pins a child process to the cores its parent gave it, if any.
func pinFromEnv() error {
	v := os.Getenv(cpusEnv)
	if v == "" {
		return nil
	}
	var cpus []int
	for _, f := range strings.Split(v, ",") {
		c, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("%s=%q: %w", cpusEnv, v, err)
		}
		cpus = append(cpus, c)
	}
	return pin(cpus)
}

// childCommand is this binary as a child process, with env added and pinned to cpus (none:
// not pinned).
func childCommand(cpus []int, env ...string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), env...)
	if len(cpus) > 0 {
		cmd.Env = append(cmd.Env, cpusEnv+"="+joinInts(cpus))
	}
	cmd.Stderr = os.Stderr
	return cmd, nil
}

// rawConfig is the raw client's: where to post (the bulkinsert URL with the list), the file to
// encode and how many requests to keep in flight.
type rawConfig struct {
	URL      string `json:"url"`
	Path     string `json:"path"`
	InFlight int    `json:"in_flight"`
}

// rawChildResult is what the raw client measured: its seconds from its first request to its
// last answer, the mean round trip of a request and its own CPU seconds meanwhile.
type rawChildResult struct {
	Rows       int     `json:"rows"`
	Seconds    float64 `json:"seconds"`
	RoundTrip  float64 `json:"round_trip"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Error      string  `json:"error,omitempty"`
}

// rawChild is the raw client process: it maps and encodes the file as 1000-row bodies
// before the clock starts, then posts them with plain net/http.
func rawChild(raw string) int {
	var c rawConfig
	var res rawChildResult
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(res) }()
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		res.Error = err.Error()
		return 0
	}
	bodies, rows, err := encode(c.Path)
	if err != nil {
		res.Error = fmt.Sprintf("encode %s: %v", c.Path, err)
		return 0
	}
	cpu0 := cpuSeconds()
	secs, roundTrip, err := post(c.URL, bodies, c.InFlight)
	res.CPUSeconds = cpuSeconds() - cpu0
	if err != nil {
		res.Error = err.Error()
		return 0
	}
	res.Rows, res.Seconds, res.RoundTrip = rows, secs, roundTrip
	return 0
}

// post posts the bodies to url, inFlight at a time, and returns the seconds it took and the
// mean round trip of a request.
func post(url string, bodies [][]byte, inFlight int) (float64, float64, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: inFlight}}
	var next, roundTrips atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(bodies[i]))
				req.SetBasicAuth(benchUser, benchKey)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					roundTrips.Add(int64(time.Since(t0)))
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("HTTP %d", resp.StatusCode)
					}
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	return secs, time.Duration(roundTrips.Load()).Seconds() / float64(len(bodies)), nil
}

// runRaw runs the raw client in a process of its own (on cpus, if any) and returns what it
// measured.
func runRaw(c rawConfig, cpus []int) (rawChildResult, error) {
	raw, _ := json.Marshal(c)
	cmd, err := childCommand(cpus, rawEnv+"="+string(raw))
	if err != nil {
		return rawChildResult{}, err
	}
	out, err := cmd.Output()
	if err != nil {
		return rawChildResult{}, fmt.Errorf("raw client: %w", err)
	}
	var res rawChildResult
	if err := json.Unmarshal(out, &res); err != nil {
		return rawChildResult{}, fmt.Errorf("raw client output %q: %w", out, err)
	}
	if res.Error != "" {
		return res, errors.New(res.Error)
	}
	return res, nil
}
