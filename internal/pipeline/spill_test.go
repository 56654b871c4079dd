package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/spillset"
	"github.com/subsync/subsync/internal/testdisk"
	"github.com/subsync/subsync/internal/testlog"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/state"
)

// spillCSV is a CSV file of n rows whose e-mails repeat near and far (drawn among n*2/3),
// and the e-mails in order.
func spillCSV(n int, seed uint64) (string, []string) {
	rng := rand.New(rand.NewPCG(seed, seed))
	var b strings.Builder
	b.WriteString("E-post,Fornavn\n")
	emails := make([]string, n)
	for i := range emails {
		emails[i] = fmt.Sprintf("p%d@example.com", rng.IntN(n*2/3))
		fmt.Fprintf(&b, "%s,Ola%d\n", emails[i], i)
	}
	return b.String(), emails
}

// spillRun runs an import of csvText by policy with the given memory budget (0: the
// default) and spill folder, on a fresh SQLite store; it returns the run's error, the
// e-mails sent in order, the run as stored, its rejects and its debug log.
func spillRun(t *testing.T, csvText, policy string, budget int64, dir string) (error, []string, state.Run, []state.Reject, string) {
	t.Helper()
	sender := &recordingSender{}
	cfg, store, run := testPipeline(t, csvText, sender)
	spec, err := mapping.ParseSpec([]byte(fmt.Sprintf("duplicates = %q\n[columns]\n\"E-post\" = \"email\"\nFornavn = \"firstname\"\n", policy)))
	require.NoError(t, err)
	withMapping(t, &cfg, spec, mapping.Fields{})
	cfg.Window, cfg.MemoryBudget, cfg.TempDir = 1, budget, dir
	var log testlog.Buffer
	cfg.Logger = slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	runErr := newEngine(t, cfg).Run(context.Background(), 0)
	got, err := store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	var rejects []state.Reject
	require.NoError(t, store.Rejects(context.Background(), run.ID, func(rj state.Reject) error {
		rejects = append(rejects, rj)
		return nil
	}))
	return runErr, sender.emails, got, rejects, log.String()
}

// spillStats is the run's "duplicate e-mails spilled" log record.
func spillStats(t *testing.T, log string) map[string]float64 {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec["msg"] == "duplicate e-mails spilled" {
			out := map[string]float64{}
			for k, v := range rec {
				if f, ok := v.(float64); ok {
					out[k] = f
				}
			}
			return out
		}
	}
	t.Fatal("the run did not spill")
	return nil
}

// TestPipelineDuplicatesAcrossSpills: a run whose duplicate set holds a few thousand
// addresses in memory, and spills the rest to its temporary folder dozens of times, decides
// every row as a run that holds them all does, by each policy: the same rows sent in the
// same order (all of them for last, the first of each address for first and reject), the
// same rejects and counts. Its set's memory stays within the budget, and nothing is left in
// the folder.
func TestPipelineDuplicatesAcrossSpills(t *testing.T) {
	t.Parallel()
	const n = 60_000
	csvText, emails := spillCSV(n, 1)
	var firsts []string
	seen := map[string]bool{}
	for _, e := range emails {
		if !seen[e] {
			firsts = append(firsts, e)
		}
		seen[e] = true
	}
	for _, policy := range []string{mapping.DuplicatesLast, mapping.DuplicatesFirst, mapping.DuplicatesReject} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "tmp")
			refErr, refSent, refRun, refRejects, _ := spillRun(t, csvText, policy, 0, t.TempDir())
			require.NoError(t, refErr)
			runErr, sent, run, rejects, log := spillRun(t, csvText, policy, spillset.MinBudget, dir)
			require.NoError(t, runErr)

			want := firsts
			if policy == mapping.DuplicatesLast {
				want = emails
			}
			require.Equal(t, want, refSent)
			require.Equal(t, want, sent)
			require.Equal(t, refRun.Counts, run.Counts)
			require.Equal(t, refRejects, rejects)
			if policy == mapping.DuplicatesReject {
				require.Len(t, rejects, n-len(firsts))
			} else {
				require.Equal(t, int64(n-len(firsts)), run.Counts.Duplicates)
			}
			st := spillStats(t, log)
			require.Greater(t, st["spills"], 20.0)
			require.LessOrEqual(t, st["peak_bytes"], float64(spillset.MinBudget))
			require.Equal(t, float64(len(firsts)), st["addresses"])
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "the spill folder is left empty")
		})
	}
}

// TestPipelineSpillDiskFull: a run whose duplicate set cannot spill (its folder's disk is
// full) fails saying so, sends nothing it did not decide on, leaves no file, and, the disk
// freed, resumes from its checkpoint (replaying the addresses before it into a set that
// spills again) to exact books: each address sent once, every row counted once.
func TestPipelineSpillDiskFull(t *testing.T) {
	t.Parallel()
	const n = 30_000
	csvText, emails := spillCSV(n, 2)
	distinct := map[string]bool{}
	for _, e := range emails {
		distinct[e] = true
	}
	dir := testdisk.Small(t, 1<<20)
	filler := testdisk.Fill(t, dir, 0)

	sender := &recordingSender{}
	cfg, store, run := testPipeline(t, csvText, sender)
	spec, err := mapping.ParseSpec([]byte("duplicates = \"first\"\n[columns]\n\"E-post\" = \"email\"\n"))
	require.NoError(t, err)
	withMapping(t, &cfg, spec, mapping.Fields{})
	cfg.Window, cfg.MemoryBudget, cfg.TempDir = 1, spillset.MinBudget, dir
	err = newEngine(t, cfg).Run(context.Background(), 0)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.ErrorContains(t, err, "duplicate e-mails: spill the e-mail hashes beyond the memory budget (16384 bytes) to "+dir+": write the spill file: ")
	first, err := store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Less(t, first.Position, int64(n))
	require.Less(t, len(sender.emails), len(distinct))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the filler")

	require.NoError(t, os.Remove(filler))
	acked, err := store.AckedAbove(context.Background(), run.ID, first.Position)
	require.NoError(t, err)
	again := &recordingSender{}
	cfg = testPipelineOn(t, store, run, csvText, again)
	withMapping(t, &cfg, spec, mapping.Fields{})
	cfg.Window, cfg.MemoryBudget, cfg.TempDir, cfg.Done = 1, spillset.MinBudget, dir, acked
	require.NoError(t, newEngine(t, cfg).Run(context.Background(), first.Position))

	all := append(slices.Clone(sender.emails), again.emails...)
	slices.Sort(all)
	require.Len(t, all, len(distinct), "each address sent once")
	require.Equal(t, len(all), len(slices.Compact(all)))
	got, err := store.Run(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, int64(n), got.Position)
	require.Equal(t, int64(n), got.Counts.Read)
	require.Equal(t, int64(len(distinct)), got.Counts.Sent)
	require.Equal(t, int64(n-len(distinct)), got.Counts.Duplicates)
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}
