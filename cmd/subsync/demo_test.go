package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/cli"
)

// demoJSON is the part of `subsync demo --json` this test reads.
type demoJSON struct {
	Dir  string `json:"dir"`
	Runs []struct {
		Step string `json:"step"`
		Run  struct {
			ID     int64  `json:"id"`
			Kind   string `json:"kind"`
			State  string `json:"state"`
			Counts struct {
				Read, Sent, Rejected, Duplicates, Suppressed, Unchanged, Removed int64
			} `json:"counts"`
			Changes struct {
				Read int64 `json:"read"`
			} `json:"changes"`
		} `json:"run"`
		Rejects map[string]int64 `json:"rejects_by_code"`
	} `json:"runs"`
	Lists []struct {
		Subscribers, Active, Unsubscribed, Bounced int64
	} `json:"lists"`
}

// TestBinaryDemo runs `subsync demo` as the README's first command does: no configuration,
// no environment, an empty working directory.
func TestBinaryDemo(t *testing.T) {
	t.Parallel()
	start := time.Now()
	r := run(t, t.TempDir(), nil, "demo")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Less(t, time.Since(start), 30*time.Second)
	require.Contains(t, r.stdout, "RUN  STEP")
	require.Contains(t, r.stdout, "Try next:")
	first, _, _ := strings.Cut(r.stdout, "\n")
	_, dir, ok := strings.Cut(first, "the job queue in ")
	require.True(t, ok, first)
	require.NoDirExists(t, dir)
}

// TestBinaryDemoKeep checks the demo's numbers against its kept sample file and run history.
func TestBinaryDemoKeep(t *testing.T) {
	t.Parallel()
	r := run(t, t.TempDir(), nil, "demo", "--keep", "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var d demoJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d), r.stdout)
	require.DirExists(t, d.Dir)
	t.Cleanup(func() { os.RemoveAll(d.Dir) })
	require.Len(t, d.Runs, 5)
	for _, run := range d.Runs {
		require.Equal(t, "completed", run.Run.State, run.Step)
	}
	imp, pull, sync, resync := d.Runs[0], d.Runs[2], d.Runs[3], d.Runs[4]

	// Every data line of the CSV file, as the CRM last changed it, is read (no quoted line
	// breaks in it).
	data, err := os.ReadFile(filepath.Join(d.Dir, "kontakter.csv"))
	require.NoError(t, err)
	lines := int64(bytes.Count(data, []byte("\r\n"))) - 1 // the header
	require.Equal(t, lines, resync.Run.Counts.Read)

	// The rows it did not send are in the run history, one per rejected row.
	rej := run(t, d.Dir, nil, "--config", filepath.Join(d.Dir, "subsync.toml"), "runs",
		strconv.FormatInt(imp.Run.ID, 10), "--rejects", "-")
	require.Equal(t, cli.ExitOK, rej.code, rej.stderr)
	require.Equal(t, imp.Run.Counts.Rejected, int64(strings.Count(rej.stdout, "\n"))-1)
	var byCode int64
	for _, n := range imp.Rejects {
		byCode += n
	}
	require.Equal(t, imp.Run.Counts.Rejected, byCode)
	require.Positive(t, imp.Run.Counts.Duplicates)

	// Each row read is counted once: sent, rejected or duplicate.
	c := imp.Run.Counts
	require.Equal(t, c.Read, c.Sent+c.Rejected+c.Duplicates)
	// The last sync sent the one new address, and unsubscribed the old one and those who left.
	rc := resync.Run.Counts
	require.Equal(t, int64(1), rc.Sent)
	require.Equal(t, imp.Run.Counts.Read-rc.Read+1, rc.Removed)
	require.Equal(t, c.Sent+rc.Sent, d.Lists[0].Subscribers)

	// The second sync: everyone the status pull recorded is suppressed, everything else unchanged.
	s := sync.Run.Counts
	require.Equal(t, "status_pull", pull.Run.Kind)
	require.Positive(t, pull.Run.Changes.Read)
	require.Equal(t, pull.Run.Changes.Read, s.Suppressed)
	require.Equal(t, d.Lists[0].Unsubscribed+d.Lists[0].Bounced, s.Suppressed+rc.Removed)
	require.Zero(t, s.Sent)
	require.Equal(t, c.Rejected, s.Rejected)
	require.Equal(t, c.Duplicates, s.Duplicates)
	require.Equal(t, s.Read-s.Rejected-s.Duplicates-s.Suppressed, s.Unchanged)
	require.Equal(t, imp.Rejects, sync.Rejects)
}
