package state_test

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/state"
)

// BenchmarkImportSaves saves the fingerprints of an import of n rows as a run does: every
// 250,000 rows (jobs.FingerprintFlushDefault) a stepped save, with a no-op between the steps
// (where a run writes its checkpoints), into a fresh database. It reports the saves' time per
// fingerprint (ns/fp) and the process's CPU time in them (cpu-s: the client's, on Postgres),
// their longest step (ms/step-max: the run's checkpoints wait for it on
// SQLite), the bytes the process wrote to files (write-MB: SQLite's log and database, from
// /proc/self/io) or the server's write-ahead log grew by (wal-MB: Postgres, the whole
// server's), and the rows of the list's stored fingerprints (parts).
//
//	go test ./state -run '^$' -bench 'BenchmarkImportSaves/2M' -benchtime 1x -count 3
//	go test ./state -run '^$' -bench 'BenchmarkImportSaves/10M' -benchtime 1x -count 3
func BenchmarkImportSaves(b *testing.B) {
	for _, n := range []int{2_000_000, 10_000_000} {
		b.Run(strconv.Itoa(n/1_000_000)+"M", func(b *testing.B) {
			eachBenchDB(b, func(b *testing.B, s *state.Store, _ *roundTrips) { benchImportSaves(b, s, n) })
		})
	}
}

func benchImportSaves(b *testing.B, s *state.Store, n int) {
	ctx := context.Background()
	const flush = 250_000
	list := int64(0)
	for b.Loop() {
		list++
		set := state.NewFingerprintSet(list)
		var took, longest, cpu time.Duration
		var stepStart time.Time
		between := func() {
			now := time.Now()
			longest = max(longest, now.Sub(stepStart))
			stepStart = now
		}
		written := bytesWritten(b, s)
		for i := range n {
			// Hashes, as a run's are: Postgres compresses the parts it stores out of line
			// (TOAST), at a cost that depends on them.
			k := uint64(i) + uint64(list)<<40
			set.Add(state.Fingerprint{Email: splitmix(k), Payload: splitmix(k ^ 1<<62), Source: splitmix(k ^ 1<<63)})
			if set.Pending() == flush || i == n-1 {
				start, startCPU := time.Now(), cpuTime()
				stepStart = start
				require.NoError(b, s.SaveFingerprintsStepped(ctx, set, between))
				took += time.Since(start)
				cpu += cpuTime() - startCPU
			}
		}
		written = bytesWritten(b, s) - written
		var parts int
		require.NoError(b, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM subsync_fingerprint WHERE list_id = $1",
			list).Scan(&parts))
		stored, err := s.FingerprintCount(ctx, list)
		require.NoError(b, err)
		require.Equal(b, int64(n), stored)
		b.ReportMetric(float64(took.Nanoseconds())/float64(n), "ns/fp")
		b.ReportMetric(took.Seconds(), "save-s")
		b.ReportMetric(cpu.Seconds(), "cpu-s")
		b.ReportMetric(float64(longest.Microseconds())/1000, "ms/step-max")
		b.ReportMetric(float64(parts), "parts")
		unit := "write-MB"
		if s.Dialect() == state.Postgres {
			unit = "wal-MB"
		}
		b.ReportMetric(float64(written)/1e6, unit)
	}
	b.ReportMetric(0, "ns/op")
}

// bytesWritten is, on SQLite, the bytes the process has written to files (wchar of
// /proc/self/io), and on Postgres, the server's write-ahead log position.
func bytesWritten(b *testing.B, s *state.Store) int64 {
	b.Helper()
	if s.Dialect() == state.Postgres {
		var lsn int64
		require.NoError(b, s.DB().QueryRowContext(context.Background(),
			"SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint").Scan(&lsn))
		return lsn
	}
	return procWchar(b)
}

func procWchar(b *testing.B) int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(b, err)
			return n
		}
	}
	return 0
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// splitmix spreads i over 64 bits as an e-mail hash does.
func splitmix(i uint64) uint64 {
	z := i + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
