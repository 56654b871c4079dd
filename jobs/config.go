package jobs

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/internal/secret"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// Defaults of Config.
const (
	ConcurrencyDefault      = 4
	BatchesInFlightDefault  = 2
	ShutdownTimeoutDefault  = 30 * time.Second
	LeaseTTLDefault         = 30 * time.Second
	PollIntervalDefault     = 500 * time.Millisecond
	StatusOverlapDefault    = 10 * time.Minute
	FingerprintFlushDefault = 250_000
	// MemoryBudgetDefault is Config.MemoryBudget's default (32 MiB).
	MemoryBudgetDefault = 32 << 20
	// TimeZoneDefault is the zone a schedule with no time zone is read in.
	TimeZoneDefault = "UTC"
	// SQLiteFile is the name of the embedded database in Config.DataDir.
	SQLiteFile = "subsync.db"
)

// Write-back kinds: where a status pull writes the changes it found.
const (
	// WriteBackSQL runs a statement against the source database, once per change, all of a
	// pull's changes in one transaction.
	WriteBackSQL = "sql"
	// WriteBackCSV appends the changes to a CSV file.
	WriteBackCSV = "csv"
)

// Config configures a Runtime. Zero fields take the defaults above.
type Config struct {
	// DatabaseURL is a Postgres URL (postgres://…): River and subsync's tables live there, and
	// any number of workers may share it. Empty means the embedded SQLite database
	// DataDir/subsync.db (one machine). The schema is the URL's search_path, if it sets one.
	DatabaseURL string
	// DataDir holds the SQLite database and working files (restored staged files). Required.
	DataDir string
	// SharedDirs are directories on shared storage that every worker reads at the same path
	// (absolute paths). On Postgres, EnqueueImport queues a file under one of them (its
	// symbolic links resolved) with its path, without copying it into the database.
	SharedDirs []string

	// Concurrency is how many jobs this process works at once.
	Concurrency int
	// BatchesInFlight is how many bulk batches one run has sent and not yet checkpointed. It
	// bounds what a killed worker sends twice: at most this many batches per kill.
	BatchesInFlight int
	// ShutdownTimeout is how long a stopping worker lets in-flight batches finish before it
	// cancels them. Runs resume from their checkpoint either way.
	ShutdownTimeout time.Duration
	// MetricsAddr is where Run serves /metrics and /healthz ("host:port"); empty = no listener
	// (Handler serves the same).
	MetricsAddr string

	// Sink configures the subscriber service client. Its Observer, if any, still gets called;
	// the Runtime adds its own for metrics.
	Sink sink.Config
	// Syncs are the named syncs `subsync sync NAME` and schedules run.
	Syncs []SyncSpec
	// Sources are named database sources an import may read (ImportArgs.Source): job args
	// carry the name, never the DSN.
	Sources map[string]sources.Config
	// StatusPull configures the status pull job.
	StatusPull StatusPullSpec
	// Retention is how long run history, rejects and the status change log are kept.
	Retention RetentionSpec
	// Notify configures the failure notifications (a webhook); zero = none.
	Notify NotifySpec

	// Logger receives the runtime's logs (and River's). nil discards.
	Logger *slog.Logger
	// WorkerID names this worker in run history and River (client id); default host-pid-random.
	WorkerID string

	// LeaseTTL is how long a run stays claimed by a worker that stopped renewing it (killed,
	// cut off) before another worker takes it over. Renewed every LeaseTTL/3.
	LeaseTTL time.Duration
	// PollInterval is how often Wait reads a run's progress.
	PollInterval time.Duration
	// FingerprintFlush is how many delta fingerprints (24 bytes each) a run holds before
	// saving them; they are also saved when the run ends. A run that has saved more than
	// eight times this saves every eighth of what it saved, up to one and a half times this:
	// each save adds a part to the list's buckets, and keeping them few costs more the larger
	// the list. A smaller value costs more saves for less memory.
	FingerprintFlush int
	// MemoryBudget is how many bytes each of a run's sets that grow with its rows (the e-mail
	// hashes of the duplicate check, a delta sync's loaded fingerprints) may hold in memory;
	// beyond it the set spills to a temporary file under DataDir (see pipeline.Config).
	MemoryBudget int64
}

// SyncSpec is one named sync from a source into a list.
type SyncSpec struct {
	// Name identifies the sync; it is what job args carry.
	Name string
	// Schedule is a 5-field cron spec or a descriptor (@daily, @hourly, @every 1h); empty =
	// on demand only.
	Schedule string
	// TimeZone is the IANA zone the schedule is read in (Europe/Oslo); empty = TimeZoneDefault.
	TimeZone string
	// ListID is the list the rows go to.
	ListID int64
	// Source is where rows come from (a file or a database, with its DSN).
	Source sources.Config
	// Mapping maps the source's columns; nil = by column names (mapping.Auto).
	Mapping *mapping.Spec
	// Suppression is the suppression policy: pipeline.SuppressionSkip (default) or
	// pipeline.SuppressionUpdateKeepStatus.
	Suppression string
	// Removed is what becomes of people the sync delivered before and a complete read of its
	// source no longer contains: RemovedKeep (default) or RemovedUnsubscribe.
	Removed string
	// MaxRemovals is the removal guard: a count ("500") or a percentage of the sync's members
	// ("10%"); a run that would unsubscribe more stops before unsubscribing anyone, unless
	// SyncArgs.AllowRemovals. Default MaxRemovalsDefault.
	MaxRemovals string
	// VerifyEvery, in TimeZone, is when a verifying run of the sync (SyncArgs.Verify) is
	// queued on its own; empty = only on demand (Runtime.EnqueueVerify).
	VerifyEvery string
}

// StatusPullSpec configures the status pull.
type StatusPullSpec struct {
	// Schedule and TimeZone as in SyncSpec; empty = only on demand.
	Schedule string
	TimeZone string
	// Overlap is subtracted from the cursor on every pull. Default StatusOverlapDefault.
	Overlap time.Duration
	// WriteBack is where new changes are written back to; a zero Kind = changes only feed
	// the suppression list.
	WriteBack WriteBackSpec
	// ReconcileSchedule, in TimeZone, is when a reconciliation runs on its own (see
	// StatusPullArgs.Reconcile); empty = only on demand (Runtime.EnqueueReconcile).
	ReconcileSchedule string
	// Reconcile makes every pull also read, for the list of every sync, the subscribers the
	// service holds as unsubscribed or bounced (GET /subscribers/by_list, updated since the
	// cursor minus the overlap), and record those the suppression list lacks: a safety net
	// for changes the status feed did not list.
	Reconcile bool
}

// WriteBackSpec is where a status pull writes the changes back to.
//
// A change is written back once per target (the Kind): it is marked done after the write
// committed (the SQL transaction, or the appended lines synced to disk). The state database
// and the source cannot share a transaction, so a crash between the two writes the same
// change again on the next pull: write an idempotent statement (an UPDATE setting a status),
// and let CSV readers skip a repeated id.
type WriteBackSpec struct {
	// Kind is WriteBackSQL, WriteBackCSV, or "" for none.
	Kind string
	// Driver (pgx, postgres, postgresql, mysql or sqlite), DSN and Statement of a sql
	// write-back. The statement names its parameters :email, :status, :status_mobile,
	// :changed_at, :subscriber_id and :list_id (see CheckWriteBackStatement); they are
	// rewritten to the driver's placeholders.
	Driver    string
	DSN       string
	Statement string
	// Path is the CSV file of a csv write-back: the file the changes are appended to, or,
	// with EmailColumn, the contacts file whose rows they update.
	Path string
	// EmailColumn makes a csv write-back update Path in place: the rows whose EmailColumn
	// holds the address (trimmed, case-insensitive) get the status in StatusColumn (default
	// StatusColumnDefault; added when the header lacks it) and, when set, the time in
	// ChangedAtColumn. A change whose address no row holds matches nothing.
	EmailColumn     string
	StatusColumn    string
	ChangedAtColumn string
	// UnmatchedRetries is how many later pulls try again a change that matched nothing in
	// the source (an UPDATE that matched no row, an address the CSV file lacks), unless a
	// later change of the same person supersedes it; 0 = UnmatchedRetriesDefault.
	UnmatchedRetries int
}

// Defaults of WriteBackSpec.
const (
	StatusColumnDefault     = "status"
	UnmatchedRetriesDefault = 3
)

// String describes the write-back without the DSN's password.
func (w WriteBackSpec) String() string {
	switch w.Kind {
	case WriteBackSQL:
		return fmt.Sprintf("sql write-back (driver %s, dsn %s)", w.Driver, secret.DSN(w.Driver, w.DSN))
	case WriteBackCSV:
		return "csv write-back to " + w.Path
	}
	return "no write-back"
}

// LogValue logs the write-back without the DSN's password.
func (w WriteBackSpec) LogValue() slog.Value { return slog.StringValue(w.String()) }

// Format makes every fmt verb print String, so that %#v cannot print the DSN either.
func (w WriteBackSpec) Format(f fmt.State, _ rune) { _, _ = fmt.Fprint(f, w.String()) }

func (c Config) withDefaults() Config {
	c.Concurrency = cmp.Or(c.Concurrency, ConcurrencyDefault)
	c.BatchesInFlight = cmp.Or(c.BatchesInFlight, BatchesInFlightDefault)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, ShutdownTimeoutDefault)
	c.LeaseTTL = cmp.Or(c.LeaseTTL, LeaseTTLDefault)
	c.PollInterval = cmp.Or(c.PollInterval, PollIntervalDefault)
	c.FingerprintFlush = cmp.Or(c.FingerprintFlush, FingerprintFlushDefault)
	c.MemoryBudget = cmp.Or(c.MemoryBudget, MemoryBudgetDefault)
	c.StatusPull.Overlap = cmp.Or(c.StatusPull.Overlap, StatusOverlapDefault)
	c.Retention.Rejects = cmp.Or(c.Retention.Rejects, RetentionRejectsDefault)
	c.Retention.Runs = cmp.Or(c.Retention.Runs, RetentionRunsDefault)
	c.Retention.StatusLog = cmp.Or(c.Retention.StatusLog, RetentionStatusLogDefault)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Syncs = slices.Clone(c.Syncs) // the caller's slice is theirs (and may be shared)
	for i := range c.Syncs {
		c.Syncs[i].Suppression = cmp.Or(c.Syncs[i].Suppression, pipeline.SuppressionSkip)
		c.Syncs[i].Removed = cmp.Or(c.Syncs[i].Removed, RemovedKeep)
		c.Syncs[i].MaxRemovals = cmp.Or(c.Syncs[i].MaxRemovals, MaxRemovalsDefault)
	}
	return c
}

func (c Config) sync(name string) (SyncSpec, bool) {
	for _, s := range c.Syncs {
		if s.Name == name {
			return s, true
		}
	}
	return SyncSpec{}, false
}
