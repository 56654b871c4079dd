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
	"time"
)

// DefaultPath is the configuration file read when --config is not given.
const DefaultPath = "subsync.toml"

// Environment variables that override secrets in the file (see the package doc).
const (
	EnvAPIKey      = "SUBSYNC_API_KEY"
	EnvUserID      = "SUBSYNC_USER_ID"
	EnvDatabaseURL = "SUBSYNC_DATABASE_URL"
)

// Defaults applied by [Load] to keys left out or set to their zero value.
const (
	BaseURLDefault           = "https://subscribers.dialogapi.no/api/public/v2"
	RequestsPerSecondDefault = 5.0
	MaxInFlightDefault       = 4
	TimeoutDefault           = 30 * time.Second
	MaxAttemptsDefault       = 8
	MaxRetryTimeDefault      = 5 * time.Minute
	RetryAfterCapDefault     = 60 * time.Second

	DataDirDefault = "data"

	ConcurrencyDefault     = 4
	BatchesInFlightDefault = 2
	MetricsAddressDefault  = "127.0.0.1:9464"
	ShutdownTimeoutDefault = 30 * time.Second

	TimeZoneDefault       = "UTC"
	SuppressionDefault    = SuppressionSkip
	StatusScheduleDefault = "*/15 * * * *"
	StatusOverlapDefault  = 10 * time.Minute
)

// Off disables an optional feature whose key otherwise has a default
// (worker.metrics_address, status.schedule).
const Off = "off"

// Suppression policies: what a sync does with a row whose e-mail is on the suppression list
// (the person unsubscribed or bounced).
const (
	// SuppressionSkip leaves the row out of the push entirely (counted as suppressed). The
	// default.
	SuppressionSkip = "skip"
	// SuppressionUpdateKeepStatus pushes the row's data through bulkinsert's status form with
	// the suppressed status (status=unsubscribed or status=bounce), so the service keeps the
	// person unsubscribed or bounced while names and fields stay current.
	SuppressionUpdateKeepStatus = "update-keep-status"
)

// Source kinds.
const (
	KindCSV  = "csv"
	KindXLSX = "xlsx"
	KindSQL  = "sql"
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
	// RequestsPerSecond caps the request rate. Default RequestsPerSecondDefault; negative = unlimited.
	RequestsPerSecond float64 `toml:"requests_per_second"`
	// MaxInFlight caps concurrent requests. Default MaxInFlightDefault.
	MaxInFlight int `toml:"max_in_flight"`
	// Timeout bounds one HTTP attempt. Default TimeoutDefault.
	Timeout Duration `toml:"timeout"`
	// MaxAttempts bounds the attempts of one call, retries included. Default MaxAttemptsDefault.
	MaxAttempts int `toml:"max_attempts"`
	// MaxRetryTime bounds one call, retries and waits included. Default MaxRetryTimeDefault.
	MaxRetryTime Duration `toml:"max_retry_time"`
	// RetryAfterCap is the longest Retry-After waited for in the client; a longer one makes
	// the job snooze instead. Default RetryAfterCapDefault.
	RetryAfterCap Duration `toml:"retry_after_cap"`
}

// Database configures the queue and state database.
type Database struct {
	// URL is a Postgres URL (postgres://…). Empty means an embedded SQLite database in
	// DataDir (one machine). SUBSYNC_DATABASE_URL wins.
	URL string `toml:"url"`
	// DataDir holds the SQLite database and local working files. Default DataDirDefault,
	// relative to the configuration file.
	DataDir string `toml:"data_dir"`
}

// Worker configures `subsync run`.
type Worker struct {
	// Concurrency is how many jobs one worker process works at once. Default ConcurrencyDefault.
	Concurrency int `toml:"concurrency"`
	// BatchesInFlight is how many bulk batches one run sends concurrently. Default BatchesInFlightDefault.
	BatchesInFlight int `toml:"batches_in_flight"`
	// MetricsAddress is where /metrics and /healthz are served. Default
	// MetricsAddressDefault; "off" disables the listener.
	MetricsAddress string `toml:"metrics_address"`
	// ShutdownTimeout is how long a stopping worker lets running jobs finish before it
	// cancels them (they resume from their checkpoint). Default ShutdownTimeoutDefault.
	ShutdownTimeout Duration `toml:"shutdown_timeout"`
}

// Sync is one named sync from a source into a list.
type Sync struct {
	// Name identifies the sync (`subsync sync NAME`): letters, digits, '-', '_' and '.'.
	Name string `toml:"name"`
	// Schedule is a 5-field cron spec or a descriptor (@daily, @every 1h). Empty = on demand only.
	Schedule string `toml:"schedule"`
	// TimeZone is the IANA zone the schedule is read in. Default TimeZoneDefault.
	TimeZone string `toml:"time_zone"`
	// List is the id of the subscriber list the rows go to.
	List int64 `toml:"list"`
	// Source is where the rows come from.
	Source Source `toml:"source"`
	// Mapping is a mapping file name or an inline table. Left out: columns are mapped
	// automatically by their names.
	Mapping Mapping `toml:"mapping"`
	// Suppression is SuppressionSkip (default) or SuppressionUpdateKeepStatus.
	Suppression string `toml:"suppression"`
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
	// TimeZone the schedule is read in. Default TimeZoneDefault.
	TimeZone string `toml:"time_zone"`
	// Overlap is subtracted from the cursor on every pull, so changes recorded late by the
	// service are not missed. Default StatusOverlapDefault.
	Overlap Duration `toml:"overlap"`
	// WriteBack sends the changes to the source. Not set = changes are only recorded in the
	// suppression list.
	WriteBack WriteBack `toml:"write_back"`
	// Reconcile makes every pull also read each sync's list for the subscribers the service
	// holds as unsubscribed or bounced, and record those the suppression list lacks (a safety
	// net for changes the status feed did not list). Default false.
	Reconcile bool `toml:"reconcile"`
}

// Write-back kinds.
const (
	WriteBackSQL = "sql"
	WriteBackCSV = "csv"
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
	// Path is the CSV file a csv write-back appends to (header written when new).
	Path string `toml:"path"`
}
