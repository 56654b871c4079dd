// Package config loads, checks and explains subsync's configuration file.
//
// The file is TOML (config.example.toml at the repository root documents every key). The
// contract:
//
//   - [Load] reads the file, applies the environment overrides, fills defaults and validates.
//     It returns a *Config only when the whole configuration is usable; otherwise an error
//     that lists every problem found, each naming the TOML key as the user typed it, the
//     offending value (quoted) and the reason: `syncs[1].schedule: "0 25 * * *": hour out of range`.
//     The credentials (user id, API key) are not required by Load: [Config.CheckCredentials]
//     reports them missing, for the commands that call the service.
//   - Unknown keys are errors, so a typo never silently falls back to a default.
//   - Durations are strings ("30s", "5m", "2h"); a bare number is refused.
//   - Relative paths in the file (api.api_key_file, database.data_dir, source paths, mapping
//     files, write-back files) are relative to the directory of the configuration file.
//   - Secrets: a non-empty environment variable wins over the file. SUBSYNC_API_KEY replaces
//     api.api_key and api.api_key_file, SUBSYNC_USER_ID replaces api.user_id, and
//     SUBSYNC_DATABASE_URL replaces database.url. Setting both api.api_key and api.api_key_file
//     in the file is an error.
//   - A Config never prints a secret: String and LogValue redact the API key, and the
//     passwords of database URLs and DSNs.
//   - A plain-http api.base_url or api.legacy_base_url is refused unless its host is a
//     loopback address (127.0.0.0/8, ::1, localhost), so the API key never crosses a network
//     in clear text.
package config

import (
	"fmt"
	"strconv"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sources"
)

// DefaultPath is the configuration file read when --config is not given.
const DefaultPath = "subsync.toml"

// Environment variables that override secrets in the file (see the package doc).
const (
	EnvAPIKey      = "SUBSYNC_API_KEY"
	EnvUserID      = "SUBSYNC_USER_ID"
	EnvDatabaseURL = "SUBSYNC_DATABASE_URL"
)

// Defaults applied by [Load] to keys left out or set to their zero value. A default that the
// client or the worker applies itself is theirs (sink.TimeoutDefault, jobs.ConcurrencyDefault,
// …): Load fills the same value, so that `config show` prints the effective configuration.
// Only the defaults of what the configuration file alone decides live here.
const (
	BaseURLDefault        = "https://subscribers.dialogapi.no/api/public/v2"
	DataDirDefault        = "data"
	MetricsAddressDefault = "127.0.0.1:9464"
	StatusScheduleDefault = "*/15 * * * *"
	// ReconcileScheduleDefault: reconciliation through /subscribers/by_list runs daily.
	ReconcileScheduleDefault = "@daily"
	// RetentionScheduleDefault: what the retention policy no longer keeps is pruned daily.
	RetentionScheduleDefault = "@daily"
)

// Off disables an optional feature whose key otherwise has a default
// (worker.metrics_address, status.schedule).
const Off = "off"

// Source kinds, as sources names them.
const (
	KindCSV  = sources.KindCSV
	KindXLSX = sources.KindXLSX
	KindSQL  = sources.KindSQL
)

// Config is the whole configuration of subsync. The zero value is not usable: get one from
// [Load] or [Parse], which fill the defaults and validate.
type Config struct {
	// API is the subscriber service: where it is and how hard to push it.
	API API `toml:"api"`
	// Database is where the queue and subsync's state live.
	Database Database `toml:"database"`
	// Worker tunes `subsync run`.
	Worker Worker `toml:"worker"`
	// Syncs are the named, optionally scheduled, source-to-list syncs.
	Syncs []Sync `toml:"syncs"`
	// Sources are named sources for `subsync import --source NAME` (a database, typically):
	// the queued job carries the name, and each worker reads the DSN from its own configuration.
	Sources map[string]Source `toml:"sources"`
	// Status is the subscriber status pull (unsubscribes and bounces flowing back).
	Status Status `toml:"status"`
	// Web protects the pages on the worker's listener.
	Web Web `toml:"web"`
	// Notify sends a message when a run fails, a schedule is missed or write-back fails.
	Notify Notify `toml:"notify"`
	// Retention is how long run history, rejected rows and the status change log are kept.
	Retention Retention `toml:"retention"`

	// Path is the file the configuration came from; empty when no file was read.
	Path string `toml:"-"`
}

// API configures the subscriber service client.
type API struct {
	// BaseURL is the v2 root including its version prefix. Default BaseURLDefault.
	BaseURL string `toml:"base_url"`
	// LegacyBaseURL is the v3 root including its version prefix. No default: the three
	// legacy operations refuse to run without it.
	LegacyBaseURL string `toml:"legacy_base_url"`
	// UserID is the account's user identifier (the Basic auth user name). SUBSYNC_USER_ID wins.
	UserID string `toml:"user_id"`
	// APIKey is the Basic auth password. Prefer APIKeyFile or SUBSYNC_API_KEY (which wins).
	APIKey string `toml:"api_key"`
	// APIKeyFile names a file holding the API key (surrounding white space is trimmed).
	APIKeyFile string `toml:"api_key_file"`
	// RequestsPerSecond caps the request rate. Default sink.RequestsPerSecondDefault; negative = unlimited.
	RequestsPerSecond float64 `toml:"requests_per_second"`
	// MaxInFlight caps concurrent requests. Default sink.MaxInFlightDefault.
	MaxInFlight int `toml:"max_in_flight"`
	// Timeout bounds one HTTP attempt. Default sink.TimeoutDefault.
	Timeout Duration `toml:"timeout"`
	// MaxAttempts bounds the attempts of one call, retries included. Default sink.MaxAttemptsDefault.
	MaxAttempts int `toml:"max_attempts"`
	// MaxRetryTime bounds one call, retries and waits included. Default sink.MaxRetryTimeDefault.
	MaxRetryTime Duration `toml:"max_retry_time"`
	// RetryAfterCap is the longest Retry-After waited for in the client; a longer one makes
	// the job snooze instead. Default sink.RetryAfterCapDefault.
	RetryAfterCap Duration `toml:"retry_after_cap"`
	// ListIDArray names the list as subscriber_list_id[]=N (true) or subscriber_list_id=N
	// (false). Unset: detected (sink.Config.ListIDDetect) and remembered for the account.
	ListIDArray *bool `toml:"list_id_array"`
}

// Database configures the queue and state database.
type Database struct {
	// URL is a Postgres URL (postgres://…). Empty means an embedded SQLite database in
	// DataDir (one machine). SUBSYNC_DATABASE_URL wins.
	URL string `toml:"url"`
	// DataDir holds the SQLite database and local working files. Default DataDirDefault,
	// relative to the configuration file.
	DataDir string `toml:"data_dir"`
	// SharedDirs are directories on shared storage that every worker reads at the same path
	// (relative to the configuration file): on Postgres an import of a file under one of
	// them is queued with its path, without copying the file into the database.
	SharedDirs []string `toml:"shared_dirs"`
}

// Worker configures `subsync run`.
type Worker struct {
	// Concurrency is how many jobs one worker process works at once. Default jobs.ConcurrencyDefault.
	Concurrency int `toml:"concurrency"`
	// BatchesInFlight is how many bulk batches one run sends concurrently. Default jobs.BatchesInFlightDefault.
	BatchesInFlight int `toml:"batches_in_flight"`
	// MetricsAddress is where /metrics and /healthz are served. Default
	// MetricsAddressDefault; "off" disables the listener.
	MetricsAddress string `toml:"metrics_address"`
	// ShutdownTimeout is how long a stopping worker lets running jobs finish before it
	// cancels them (they resume from their checkpoint). Default jobs.ShutdownTimeoutDefault.
	ShutdownTimeout Duration `toml:"shutdown_timeout"`
	// MemoryBudget is what each of a run's sets that grow with its rows (the e-mail hashes of
	// the duplicate check, a delta sync's fingerprints) may hold in memory; beyond it the set
	// spills to a temporary file in the data directory. Default jobs.MemoryBudgetDefault.
	MemoryBudget Size `toml:"memory_budget"`
}

// Sync is one named sync from a source into a list.
type Sync struct {
	// Name identifies the sync (`subsync sync NAME`): letters, digits, '-', '_' and '.'.
	Name string `toml:"name"`
	// Schedule is a 5-field cron spec or a descriptor (@daily, @every 1h). Empty = on demand only.
	Schedule string `toml:"schedule"`
	// TimeZone is the IANA zone the schedule is read in. Default jobs.TimeZoneDefault.
	TimeZone string `toml:"time_zone"`
	// List is the id of the subscriber list the rows go to.
	List int64 `toml:"list"`
	// Source is where the rows come from.
	Source Source `toml:"source"`
	// Mapping is a mapping file name or an inline table. Left out: columns are mapped
	// automatically by their names.
	Mapping Mapping `toml:"mapping"`
	// Suppression is the suppression policy: pipeline.SuppressionSkip (default) or
	// pipeline.SuppressionUpdateKeepStatus.
	Suppression string `toml:"suppression"`
	// VerifyEvery is a schedule (as Schedule, in TimeZone) of verifying runs of the sync
	// (`subsync sync NAME --verify`). Empty = never on its own.
	VerifyEvery string `toml:"verify_every"`
	// Removed is what becomes of people the sync delivered before who left its source:
	// jobs.RemovedKeep (default) or jobs.RemovedUnsubscribe.
	Removed string `toml:"removed"`
	// MaxRemovals is the removal guard: a count (500) or a percentage of the sync's members
	// ("10%"). Default jobs.MaxRemovalsDefault.
	MaxRemovals RemovalLimit `toml:"max_removals"`
}

// RemovalLimit is a sync's max_removals: a count written as a number (500) or a string
// ("500"), or a percentage written as a string ("10%").
type RemovalLimit string

// UnmarshalTOML takes a number or a string.
func (l *RemovalLimit) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		*l = RemovalLimit(strconv.FormatInt(v, 10))
	case string:
		*l = RemovalLimit(v)
	default:
		return fmt.Errorf(`want a count (500) or a percentage ("10%%"), got %v`, v)
	}
	return nil
}

// Source describes one source of rows.
type Source struct {
	// Kind is csv, xlsx or sql. Default: from the extension of Path (.csv, .tsv, .txt, .tab;
	// .xlsx, .xlsm), else from the file's content when it is opened.
	Kind string `toml:"kind"`
	// Path is the file of a csv or xlsx source.
	Path string `toml:"path"`
	// Encoding of a CSV file: utf-8, windows-1252, iso-8859-15, utf-16le, utf-16be or another
	// WHATWG label. Default: a byte order mark decides, else UTF-8 when valid, else windows-1252.
	Encoding string `toml:"encoding"`
	// StrayLines: what becomes of the few lines of a UTF-8 CSV file that are not UTF-8:
	// "decode" (the default: read as windows-1252, with a warning naming the line) or "reject".
	StrayLines string `toml:"stray_lines"`
	// Delimiter of a CSV file: one ASCII character, or "tab". Default: detected (',', ';', tab, '|').
	Delimiter string `toml:"delimiter"`
	// Sheet names the worksheet of an xlsx source. Default: SheetIndex.
	Sheet string `toml:"sheet"`
	// SheetIndex picks the worksheet by position (0 = first) when Sheet is empty.
	SheetIndex int `toml:"sheet_index"`
	// HeaderRow is the 1-based row holding the column names. Default 0: the first non-empty row.
	HeaderRow int `toml:"header_row"`
	// Driver of a sql source: pgx (Postgres; also postgres, postgresql), mysql (MySQL,
	// MariaDB) or sqlite.
	Driver string `toml:"driver"`
	// DSN is the connection string of a sql source. Prefer DSNEnv or DSNFile for a DSN
	// with a password.
	DSN string `toml:"dsn"`
	// DSNEnv names an environment variable holding the DSN.
	DSNEnv string `toml:"dsn_env"`
	// DSNFile names a file holding the DSN.
	DSNFile string `toml:"dsn_file"`
	// Query selects the rows of a sql source.
	Query string `toml:"query"`
	// WatermarkColumn, when set, makes a sql sync incremental: only rows whose column is
	// greater than the value recorded by the last successful run are read.
	WatermarkColumn string `toml:"watermark_column"`
}

// Status configures the subscriber status pull.
type Status struct {
	// Schedule of the pull. Default StatusScheduleDefault; "off" = only `subsync status pull`.
	Schedule string `toml:"schedule"`
	// TimeZone the schedule is read in. Default jobs.TimeZoneDefault.
	TimeZone string `toml:"time_zone"`
	// Overlap is subtracted from the cursor on every pull, so changes recorded late by the
	// service are not missed. Default jobs.StatusOverlapDefault.
	Overlap Duration `toml:"overlap"`
	// WriteBack sends the changes to the source. Not set = changes are only recorded in the
	// suppression list.
	WriteBack WriteBack `toml:"write_back"`
	// Reconcile makes every pull also read each sync's list for the subscribers the service
	// holds as unsubscribed or bounced, and record those the suppression list lacks (a safety
	// net for changes the status feed did not list). Default false.
	Reconcile bool `toml:"reconcile"`
	// ReconcileSchedule is when reconciliation runs on its own: each sync's list is read for
	// the subscribers the service holds as unsubscribed or bounced, and those the suppression
	// list lacks are recorded (a change the feed never showed is still caught). Default
	// ReconcileScheduleDefault; "off" = never on its own.
	ReconcileSchedule string `toml:"reconcile_schedule"`
	// MaxPages, MaxMegabytes and MaxTime bound one read of the status feed (requests, MiB of
	// answers, time); past one the pull fails, permanently. Defaults
	// sink.StatusMaxPagesDefault, sink.StatusMaxBytesDefault (in MiB), sink.StatusMaxTimeDefault.
	MaxPages     int      `toml:"max_pages"`
	MaxMegabytes int      `toml:"max_megabytes"`
	MaxTime      Duration `toml:"max_time"`
}

// Retention is how long subsync keeps what it records, and when it prunes the rest (see
// jobs.RetentionSpec). The suppression list and the keyed hashes of erased people are never
// pruned.
type Retention struct {
	// Rejects is how long a finished run keeps its rejected rows (whole source rows), its
	// warnings and the addresses it unsubscribed. Default jobs.RetentionRejectsDefault.
	Rejects Period `toml:"rejects"`
	// Runs is how long a finished run is kept at all. Default jobs.RetentionRunsDefault.
	Runs Period `toml:"runs"`
	// StatusLog is how long a status change is kept in the change log (with its
	// write-backs, unless one is pending). Default jobs.RetentionStatusLogDefault.
	StatusLog Period `toml:"status_log"`
	// Schedule, in TimeZone, is when the pruning runs: RetentionScheduleDefault, or "off"
	// (only subsync prune).
	Schedule string `toml:"schedule"`
	TimeZone string `toml:"time_zone"`
}

// Write-back kinds, as jobs names them.
const (
	WriteBackSQL = jobs.WriteBackSQL
	WriteBackCSV = jobs.WriteBackCSV
)

// WriteBack is where status changes are written back to.
type WriteBack struct {
	// Kind is sql or csv; empty disables write-back.
	Kind string `toml:"kind"`
	// Driver, DSN, DSNEnv and DSNFile are as in [Source], for a sql write-back.
	Driver  string `toml:"driver"`
	DSN     string `toml:"dsn"`
	DSNEnv  string `toml:"dsn_env"`
	DSNFile string `toml:"dsn_file"`
	// Statement is run once per change, all the changes of a pull in one transaction, with
	// the named parameters :email, :status, :status_mobile, :changed_at, :subscriber_id and
	// :list_id (rewritten to the driver's placeholders). It should be idempotent (an UPDATE
	// that sets a status): a change is applied once, but a crash between the commit and
	// recording it makes the next pull apply it again.
	Statement string `toml:"statement"`
	// Path is the CSV file a csv write-back appends to (header written when new), or, with
	// EmailColumn, the contacts file whose rows it updates.
	Path string `toml:"path"`
	// EmailColumn makes a csv write-back update the rows of Path that hold the address in
	// this column: StatusColumn (default jobs.StatusColumnDefault, added when missing) gets the
	// status, ChangedAtColumn (when set) the time. A change whose address no row holds is
	// unmatched.
	EmailColumn     string `toml:"email_column"`
	StatusColumn    string `toml:"status_column"`
	ChangedAtColumn string `toml:"changed_at_column"`
	// UnmatchedRetries is how many later pulls try again a change that matched nothing in
	// the source (default jobs.UnmatchedRetriesDefault).
	UnmatchedRetries int `toml:"unmatched_retries"`
}
