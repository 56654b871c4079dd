package cli

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// Names the demo gives what it creates.
const (
	demoCSVFile   = "kontakter.csv"
	demoXLSXFile  = "medlemmer.xlsx"
	demoSyncName  = "kontakter"
	demoNewsList  = "Nyhetsbrev"
	demoClubList  = "Medlemmer"
	demoConfig    = "subsync.toml"
	demoPollEvery = 100 * time.Millisecond
)

func (a *app) demoCommand() *cobra.Command {
	var keep, asJSON bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Everything in one process: emulator, embedded queue and sample files",
		Long: `Show subsync at work without any configuration or account: it starts the service
emulator and an embedded SQLite queue in a temporary directory, writes two sample files
(a Windows-1252 CSV export of ` + fmt.Sprint(demoCSVRows) + ` Norwegian contacts with a few bad rows and a duplicate,
and an Excel workbook with a title row above its header), and then, through the same job
runtime and HTTP client that 'subsync run' uses:

  1. imports the CSV file into one list and the workbook into another, with progress;
  2. lets the service mark a few people unsubscribed or bounced;
  3. pulls the status changes into the suppression list;
  4. syncs the CSV file again: the people who left are suppressed, unchanged rows skipped;
  5. changes the CSV file as the CRM would: ` + fmt.Sprint(demoLeave) + ` contacts deleted, one address changed
     (the customer number, Kundenr, is the sync's key), and syncs once more: the new
     address is sent, and the old one and the deleted contacts are unsubscribed
     (removed = "unsubscribe").

It ends with a table of the runs (rows read, sent, rejected by reason, duplicates,
suppressed, unchanged, removed). The data is the same on every run. The temporary directory is
removed at the end unless --keep is given; it then holds the sample files, the queue
database and a subsync.toml for browsing the run history with 'subsync runs'.`,
		Example: `  subsync demo
  subsync demo --keep
  subsync demo --json`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			return a.demo(cmd.Context(), keep, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temporary directory (sample files, queue database, subsync.toml)")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// demoRun is one run of the demo, as the summary shows it.
type demoRun struct {
	Step    string         `json:"step"`
	Run     runJSON        `json:"run"`
	Rejects map[string]int `json:"rejects_by_code"`
	// first is the first reject of each code, to show an example.
	first map[string]state.Reject
}

// demoList is a list of the emulator at the end of the demo.
type demoList struct {
	ID           int64  `json:"id"`
	Title        string `json:"title"`
	Subscribers  int    `json:"subscribers"`
	Active       int    `json:"active"`
	Unsubscribed int    `json:"unsubscribed"`
	Bounced      int    `json:"bounced"`
}

// demoResult is what `subsync demo --json` prints.
type demoResult struct {
	Dir        string     `json:"dir,omitempty"` // only with --keep
	Runs       []demoRun  `json:"runs"`
	Lists      []demoList `json:"lists"`
	DurationMS int64      `json:"duration_ms"`
}

// demoEnv is one demo: the emulator, the runtime and what was created.
type demoEnv struct {
	a      *app
	asJSON bool
	emu    *sinktest.Emulator
	rt     *jobs.Runtime
	res    demoResult
}

func (a *app) demo(ctx context.Context, keep, asJSON bool) (err error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "subsync-demo-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	if keep {
		defer func() {
			if !asJSON {
				fmt.Fprintf(a.stdout, "\nKept %s: the sample files, the queue database (subsync.db) and %s.\n", dir, demoConfig)
			}
		}()
	} else {
		defer func() {
			if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
				err = fmt.Errorf("remove the temporary directory: %w", rerr)
			}
		}()
	}

	sample := newDemoSample(demoSeed)
	csvPath, xlsxPath := filepath.Join(dir, demoCSVFile), filepath.Join(dir, demoXLSXFile)
	if err := writeDemoCSV(csvPath, sample.CSV); err != nil {
		return err
	}
	if err := writeDemoXLSX(xlsxPath, sample.XLSX); err != nil {
		return err
	}

	// The service: the emulator on a local port, served over real HTTP.
	emu := sinktest.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("start the emulator: %w", err)
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- emu.Serve(serveCtx, ln) }()
	defer func() {
		stopServing()
		if serr := <-served; serr != nil && err == nil {
			err = fmt.Errorf("emulator: %w", serr)
		}
	}()
	news, club := emu.CreateList(demoNewsList), emu.CreateList(demoClubList)
	baseURL := "http://" + ln.Addr().String() + sinktest.V2Prefix
	if err := writeDemoConfig(filepath.Join(dir, demoConfig), baseURL, news, csvPath); err != nil {
		return err
	}

	// The queue: the embedded SQLite database in the temporary directory. The second
	// sighting of an address is left out (duplicates = "first"), so every row read is
	// counted once: sent, rejected, duplicate, suppressed or unchanged.
	spec, csvSpec := mapping.Spec{Duplicates: mapping.DuplicatesFirst}, demoCSVMapping()
	rt, err := jobs.Open(ctx, jobs.Config{
		DataDir: dir,
		Sink: sink.Config{BaseURL: baseURL, UserID: sinktest.DefaultUser, APIKey: sinktest.DefaultKey,
			Logger: a.log, Version: a.version},
		Syncs: []jobs.SyncSpec{{Name: demoSyncName, ListID: news, Source: sources.Config{Path: csvPath},
			Mapping: &csvSpec, Removed: jobs.RemovedUnsubscribe}},
		Logger:       a.demoLogger(),
		WorkerID:     "demo",
		PollInterval: demoPollEvery,
	})
	if err != nil {
		return fmt.Errorf("open the job queue: %w", err)
	}
	defer rt.Close()

	d := &demoEnv{a: a, asJSON: asJSON, emu: emu, rt: rt}
	d.say("subsync demo: the service emulator at %s, the job queue in %s\n\n", baseURL, dir)

	d.say("1. Import %s (%d rows, Windows-1252, semicolons) into list %d %q\n",
		demoCSVFile, len(sample.CSV), news, demoNewsList)
	if err := d.step(ctx, "import "+demoCSVFile, func() (int64, error) {
		return rt.EnqueueImport(ctx, jobs.ImportArgs{Path: csvPath, ListID: news, Mapping: &csvSpec})
	}); err != nil {
		return err
	}

	d.say("2. Import %s (sheet %s, a title above the header on row %d) into list %d %q\n",
		demoXLSXFile, demoSheet, demoXLSXHeaderRow, club, demoClubList)
	if err := d.step(ctx, "import "+demoXLSXFile, func() (int64, error) {
		return rt.EnqueueImport(ctx, jobs.ImportArgs{Path: xlsxPath, ListID: club, Mapping: &spec,
			Sheet: demoSheet, HeaderRow: demoXLSXHeaderRow})
	}); err != nil {
		return err
	}

	d.say("3. In the service, %d people unsubscribe and %d addresses bounce\n", len(sample.Unsubscribe), len(sample.Bounce))
	for _, m := range []struct {
		emails []string
		status string
	}{{sample.Unsubscribe, sink.StatusUnsubscribed}, {sample.Bounce, sink.StatusBounce}} {
		for _, e := range m.emails {
			if err := emu.SetStatus(e, news, m.status); err != nil {
				return fmt.Errorf("mark %s %s in the emulator: %w", e, m.status, err)
			}
		}
	}

	d.say("4. Pull the status changes into the suppression list\n")
	if err := d.step(ctx, "status pull", func() (int64, error) { return rt.EnqueueStatusPull(ctx) }); err != nil {
		return err
	}

	d.say("5. Sync %q: %s again, into list %d; only what changed is sent\n", demoSyncName, demoCSVFile, news)
	if err := d.step(ctx, "sync "+demoSyncName, func() (int64, error) {
		return rt.EnqueueSync(ctx, demoSyncName, false)
	}); err != nil {
		return err
	}

	d.say("6. In the CRM, %d contacts are deleted and customer %s changes address; sync %q again:\n"+
		"   the new address is sent, the old one and the deleted contacts are unsubscribed\n",
		len(sample.Leave), sample.moveKey(), demoSyncName)
	if err := writeDemoCSV(csvPath, sample.changedCSV()); err != nil {
		return err
	}
	if err := d.step(ctx, "resync "+demoSyncName, func() (int64, error) {
		return rt.EnqueueSync(ctx, demoSyncName, false)
	}); err != nil {
		return err
	}

	for _, l := range []struct {
		id    int64
		title string
	}{{news, demoNewsList}, {club, demoClubList}} {
		d.res.Lists = append(d.res.Lists, listCounts(emu, l.id, l.title))
	}
	d.res.DurationMS = time.Since(start).Milliseconds()
	if keep {
		d.res.Dir = dir
	}
	if asJSON {
		return a.printJSON(d.res)
	}
	return d.summary(dir, keep, time.Since(start))
}

// demoLogger is the runtime's logger: the demo tells its own story on stdout, so the
// runtime's information lines are left out unless --log-level asks for them.
func (a *app) demoLogger() *slog.Logger {
	if a.root.PersistentFlags().Changed("log-level") {
		return a.log
	}
	return slog.New(minLevel{a.log.Handler(), slog.LevelWarn})
}

// minLevel drops records below its level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(attrs), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}

// say writes a line of the demo's story (not with --json).
func (d *demoEnv) say(format string, args ...any) {
	if !d.asJSON {
		fmt.Fprintf(d.a.stdout, format, args...)
	}
}

// step queues one job, works it with progress as `import --wait` does, and records its run.
func (d *demoEnv) step(ctx context.Context, name string, enqueue func() (int64, error)) error {
	id, err := enqueue()
	if err != nil {
		return fmt.Errorf("%s: queue: %w", name, err)
	}
	p := d.a.newProgress(ctx)
	run, err := d.rt.Wait(ctx, id, p.update)
	p.done()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	dr := demoRun{Step: name, Run: toRunJSON(run), Rejects: map[string]int{}, first: map[string]state.Reject{}}
	err = d.rt.State().Rejects(ctx, run.ID, func(r state.Reject) error {
		if dr.Rejects[r.Code]++; dr.Rejects[r.Code] == 1 {
			dr.first[r.Code] = r
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: read the rejects: %w", name, err)
	}
	d.res.Runs = append(d.res.Runs, dr)
	c := run.Counts
	if run.Kind == state.KindStatusPull {
		d.say("   run %d: %d status changes recorded (%s)\n", run.ID, c.Read-c.Duplicates,
			run.Duration().Round(time.Millisecond))
		return nil
	}
	removed := ""
	if c.Removed > 0 {
		removed = fmt.Sprintf(", %d unsubscribed", c.Removed)
	}
	d.say("   run %d: %d read: %d sent, %s, %s, %d suppressed, %d unchanged%s (%s)\n",
		run.ID, c.Read, c.Sent, plural(c.Rejected, "rejected", "rejected"), plural(c.Duplicates, "duplicate", "duplicates"),
		c.Suppressed, c.Unchanged, removed, run.Duration().Round(time.Millisecond))
	return nil
}

// plural writes n with the singular or plural word.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// listCounts counts a list's memberships in the emulator by e-mail status.
func listCounts(emu *sinktest.Emulator, id int64, title string) demoList {
	l := demoList{ID: id, Title: title}
	for _, s := range emu.ListSubscribers(id) {
		l.Subscribers++
		switch s.Lists[id].Status {
		case sink.StatusActive:
			l.Active++
		case sink.StatusUnsubscribed:
			l.Unsubscribed++
		case sink.StatusBounce:
			l.Bounced++
		}
	}
	return l
}

// summary prints the table of runs, the rejects by reason, the lists, and what to try next.
func (d *demoEnv) summary(dir string, keep bool, took time.Duration) error {
	a := d.a
	fmt.Fprintln(a.stdout)
	t := a.table("RUN", "STEP", "LIST", "READ", "SENT", "REJECTED", "DUPLICATES", "SUPPRESSED", "UNCHANGED", "REMOVED", "TIME")
	for _, r := range d.res.Runs {
		list := "-"
		if r.Run.ListID != 0 {
			list = fmt.Sprint(r.Run.ListID)
		}
		if r.Run.Counts == nil { // a status pull: changes read, already known
			ch := r.Run.Changes
			t.row(r.Run.ID, r.Step, list, ch["read"], "-", "-", ch["already_known"], "-", "-", "-", demoDuration(r.Run.DurationMS))
			continue
		}
		c := r.Run.Counts
		t.row(r.Run.ID, r.Step, list, c.Read, c.Sent, c.Rejected, c.Duplicates, c.Suppressed, c.Unchanged, c.Removed,
			demoDuration(r.Run.DurationMS))
	}
	if err := t.flush(); err != nil {
		return err
	}

	fmt.Fprintln(a.stdout, "\nRejected rows by reason (the first of each shown):")
	t = a.table("RUN", "CODE", "ROWS", "FIRST")
	for i, r := range d.res.Runs {
		if j := sameRejects(d.res.Runs[:i], r); j >= 0 {
			t.row(r.Run.ID, "-", r.Run.Counts.Rejected, fmt.Sprintf("the same rows as run %d", d.res.Runs[j].Run.ID))
			continue
		}
		codes := make([]string, 0, len(r.Rejects))
		for code := range r.Rejects {
			codes = append(codes, code)
		}
		slices.SortFunc(codes, func(x, y string) int {
			return cmp.Or(cmp.Compare(r.Rejects[y], r.Rejects[x]), cmp.Compare(x, y))
		})
		for _, code := range codes {
			t.row(r.Run.ID, code, r.Rejects[code], describeReject(r.first[code]))
		}
	}
	if err := t.flush(); err != nil {
		return err
	}

	fmt.Fprintln(a.stdout, "\nIn the service now:")
	t = a.table("LIST", "TITLE", "SUBSCRIBERS", "ACTIVE", "UNSUBSCRIBED", "BOUNCED")
	for _, l := range d.res.Lists {
		t.row(l.ID, l.Title, l.Subscribers, l.Active, l.Unsubscribed, l.Bounced)
	}
	if err := t.flush(); err != nil {
		return err
	}

	fmt.Fprintf(a.stdout, "\nDone in %s. Try next:\n", took.Round(10*time.Millisecond))
	t = a.table()
	if keep {
		t.row("  subsync preview "+filepath.Join(dir, demoCSVFile), "# how the rows map, and why the bad ones are rejected")
		t.row("  subsync --config "+filepath.Join(dir, demoConfig)+" runs 1 --rejects -", "# the run history, and the rows a run did not send")
	} else {
		t.row("  subsync demo --keep", "# keep the sample files and the run history to look at")
		t.row("  subsync preview contacts.csv", "# how your own CSV or XLSX file maps, and why rows would be rejected")
	}
	t.row("  go run ./cmd/subsim --user demo --key secret", "# the emulator alone on 127.0.0.1:8080, to point subsync at")
	t.row("  cp config.example.toml subsync.toml", "# every option, commented; then: subsync config check")
	return t.flush()
}

// sameRejects returns the index of an earlier run of the same source with the same rejects,
// or -1.
func sameRejects(earlier []demoRun, r demoRun) int {
	if len(r.Rejects) == 0 {
		return -1
	}
	for i, e := range earlier {
		if e.Run.Source == r.Run.Source && maps.Equal(e.Rejects, r.Rejects) &&
			maps.EqualFunc(e.first, r.first, func(a, b state.Reject) bool { return describeReject(a) == describeReject(b) }) {
			return i
		}
	}
	return -1
}

// describeReject says where a rejected row is and why, on one line.
func describeReject(r state.Reject) string {
	var b strings.Builder
	if r.Sheet != "" {
		fmt.Fprintf(&b, "%s row %d", r.Sheet, r.Line)
	} else {
		fmt.Fprintf(&b, "line %d", r.Line)
	}
	for i, p := range r.Problems() {
		if i > 0 {
			b.WriteString(";")
		}
		if p.Column != "" {
			fmt.Fprintf(&b, ", %s %q", p.Column, p.Value)
		}
		fmt.Fprintf(&b, ": %s", p.Reason)
	}
	return b.String()
}

// demoColumnsTOML is the columns of demoCSVMapping as TOML lines, in the file's order.
func demoColumnsTOML() string {
	cols := demoCSVMapping().Columns
	var b strings.Builder
	for _, c := range append([]string{demoKeyColumn}, demoHeader...) {
		fmt.Fprintf(&b, "%q = %q\n", c, cols[c].To)
	}
	return b.String()
}

func demoDuration(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// writeDemoConfig writes a configuration for looking at the kept demo directory afterwards:
// the queue database beside it, and the demo's sync (the emulator is gone by then).
func writeDemoConfig(path, baseURL string, list int64, csvPath string) error {
	body := fmt.Sprintf(`# Written by 'subsync demo': the demo's queue database is in this directory.
#   subsync --config %[1]s runs
# The emulator the demo ran against (%[2]s) stopped with the demo.

[database]
data_dir = "."

[[syncs]]
name = %[3]q
list = %[4]d
removed = "unsubscribe"
[syncs.source]
path = %[5]q
[syncs.mapping]
duplicates = "first"
[syncs.mapping.columns]
%[6]s`, path, baseURL, demoSyncName, list, filepath.Base(csvPath), demoColumnsTOML())
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
