package config

import (
	"github.com/subsync/subsync/sources"

	"cmp"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
	"golang.org/x/text/encoding/htmlindex"

	"github.com/subsync/subsync/jobs"
)

// setDefaults fills every key left out (or zero) with its default.
func (c *Config) setDefaults() {
	a := &c.API
	a.BaseURL = strings.TrimRight(cmp.Or(a.BaseURL, BaseURLDefault), "/")
	a.LegacyBaseURL = strings.TrimRight(a.LegacyBaseURL, "/")
	a.RequestsPerSecond = cmp.Or(a.RequestsPerSecond, RequestsPerSecondDefault)
	a.MaxInFlight = cmp.Or(a.MaxInFlight, MaxInFlightDefault)
	a.Timeout = cmp.Or(a.Timeout, Duration(TimeoutDefault))
	a.MaxAttempts = cmp.Or(a.MaxAttempts, MaxAttemptsDefault)
	a.MaxRetryTime = cmp.Or(a.MaxRetryTime, Duration(MaxRetryTimeDefault))
	a.RetryAfterCap = cmp.Or(a.RetryAfterCap, Duration(RetryAfterCapDefault))

	c.Database.DataDir = cmp.Or(c.Database.DataDir, DataDirDefault)

	w := &c.Worker
	w.Concurrency = cmp.Or(w.Concurrency, ConcurrencyDefault)
	w.BatchesInFlight = cmp.Or(w.BatchesInFlight, BatchesInFlightDefault)
	w.MetricsAddress = cmp.Or(w.MetricsAddress, MetricsAddressDefault)
	w.ShutdownTimeout = cmp.Or(w.ShutdownTimeout, Duration(ShutdownTimeoutDefault))

	for i := range c.Syncs {
		s := &c.Syncs[i]
		s.TimeZone = cmp.Or(s.TimeZone, TimeZoneDefault)
		s.Suppression = cmp.Or(s.Suppression, SuppressionDefault)
		src := &s.Source
		src.Kind = strings.ToLower(cmp.Or(src.Kind, kindFromPath(src.Path)))
	}

	for name, src := range c.Sources {
		src.Kind = strings.ToLower(cmp.Or(src.Kind, kindFromPath(src.Path)))
		c.Sources[name] = src
	}

	st := &c.Status
	st.Schedule = cmp.Or(st.Schedule, StatusScheduleDefault)
	st.TimeZone = cmp.Or(st.TimeZone, TimeZoneDefault)
	st.Overlap = cmp.Or(st.Overlap, Duration(StatusOverlapDefault))
}

func kindFromPath(p string) string {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".csv", ".tsv", ".txt", ".tab":
		return KindCSV
	case ".xlsx", ".xlsm", ".xltx", ".xltm", ".xls":
		return KindXLSX
	}
	return "" // the source's content decides when it is opened
}

// validate records every problem of a configuration whose defaults are filled.
func (c *Config) validate(p *problems) {
	a := c.API
	checkBaseURL(p, "api.base_url", a.BaseURL)
	if a.LegacyBaseURL != "" {
		checkBaseURL(p, "api.legacy_base_url", a.LegacyBaseURL)
	}
	if math.IsNaN(a.RequestsPerSecond) {
		p.add("api.requests_per_second", "nan", "not a number")
	}
	atLeast(p, "api.max_in_flight", a.MaxInFlight, 1)
	atLeast(p, "api.max_attempts", a.MaxAttempts, 1)
	positive(p, "api.timeout", a.Timeout)
	positive(p, "api.max_retry_time", a.MaxRetryTime)
	positive(p, "api.retry_after_cap", a.RetryAfterCap)

	if u := c.Database.URL; u != "" {
		pu, err := url.Parse(u)
		switch {
		case err != nil:
			p.add("database.url", RedactDSN(u), "not a URL")
		case pu.Scheme != "postgres" && pu.Scheme != "postgresql":
			p.add("database.url", RedactDSN(u), "want a postgres:// URL (leave it empty for the embedded SQLite database)")
		}
	}

	w := c.Worker
	atLeast(p, "worker.concurrency", w.Concurrency, 1)
	atLeast(p, "worker.batches_in_flight", w.BatchesInFlight, 1)
	if w.MetricsAddress != Off {
		if _, port, err := net.SplitHostPort(w.MetricsAddress); err != nil || port == "" {
			p.add("worker.metrics_address", w.MetricsAddress, `want host:port (e.g. "127.0.0.1:9464"), or "off"`)
		}
	}
	positive(p, "worker.shutdown_timeout", w.ShutdownTimeout)

	seen := map[string]int{}
	for i, s := range c.Syncs {
		key := fmt.Sprintf("syncs[%d]", i)
		switch {
		case s.Name == "":
			p.add(key+".name", "", "missing")
		case !nameRE.MatchString(s.Name):
			p.add(key+".name", s.Name, "use letters, digits, '-', '_' and '.' only")
		default:
			if j, dup := seen[s.Name]; dup {
				p.add(key+".name", s.Name, "already used by syncs[%d]", j)
			}
			seen[s.Name] = i
		}
		if s.Schedule != "" {
			checkSchedule(p, key+".schedule", s.Schedule, key+".time_zone")
		}
		checkTimeZone(p, key+".time_zone", s.TimeZone)
		if s.List <= 0 {
			p.add(key+".list", listValue(s.List), "missing: the id of the subscriber list to sync into")
		}
		checkSource(p, key+".source", s.Source)
		if s.Suppression != SuppressionSkip && s.Suppression != SuppressionUpdateKeepStatus {
			p.add(key+".suppression", s.Suppression, "want %q or %q", SuppressionSkip, SuppressionUpdateKeepStatus)
		}
	}

	for _, name := range slices.Sorted(maps.Keys(c.Sources)) {
		key := "sources." + name
		if !nameRE.MatchString(name) {
			p.add(key, "", "name the source with letters, digits, '-', '_' and '.' only")
		}
		checkSource(p, key, c.Sources[name])
	}

	st := c.Status
	if st.Schedule != Off {
		checkSchedule(p, "status.schedule", st.Schedule, "status.time_zone")
	}
	checkTimeZone(p, "status.time_zone", st.TimeZone)
	if st.Overlap < 0 {
		p.add("status.overlap", st.Overlap.String(), "must not be negative")
	}
	wb := st.WriteBack
	switch wb.Kind {
	case "":
		if wb.Statement != "" || wb.Path != "" || wb.DSN != "" || wb.Driver != "" {
			p.add("status.write_back.kind", "", "missing: %q or %q", WriteBackSQL, WriteBackCSV)
		}
	case WriteBackSQL:
		checkDriver(p, "status.write_back.driver", wb.Driver)
		if wb.DSN == "" && wb.DSNEnv == "" && wb.DSNFile == "" {
			p.add("status.write_back.dsn", "", "missing (or dsn_env, or dsn_file)")
		}
		if strings.TrimSpace(wb.Statement) == "" {
			p.add("status.write_back.statement", "", "missing")
		} else if err := jobs.CheckWriteBackStatement(wb.Statement); err != nil {
			p.add("status.write_back.statement", wb.Statement, "%v", err)
		}
		if wb.Path != "" {
			p.add("status.write_back.path", wb.Path, "only for a csv write-back")
		}
	case WriteBackCSV:
		if wb.Path == "" {
			p.add("status.write_back.path", "", "missing: the CSV file to append the changes to")
		}
		if wb.Statement != "" || wb.Driver != "" || wb.DSN != "" {
			p.add("status.write_back.kind", wb.Kind, "driver, dsn and statement are only for a sql write-back")
		}
	default:
		p.add("status.write_back.kind", wb.Kind, "want %q or %q", WriteBackSQL, WriteBackCSV)
	}
}

// CheckCredentials reports a missing user id or API key, in the form of [Load]'s problems.
// Load does not require them, so that commands that never call the service (migrate, runs,
// preview without custom fields) run without secrets; whatever calls the service checks.
func (c *Config) CheckCredentials() error {
	var p problems
	if c.API.UserID == "" {
		p.add("api.user_id", "", "missing: set it in the file or in %s", EnvUserID)
	}
	if c.API.APIKey == "" && c.API.APIKeyFile == "" {
		p.add("api.api_key", "", "missing: set %s (or api.api_key_file, or api.api_key)", EnvAPIKey)
	}
	if len(p) > 0 {
		return &Error{Path: c.Path, Problems: p}
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func listValue(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

func atLeast(p *problems, key string, v, min int) {
	if v < min {
		p.add(key, strconv.Itoa(v), "must be at least %d", min)
	}
}

func positive(p *problems, key string, d Duration) {
	if d <= 0 {
		p.add(key, d.String(), "must be positive")
	}
}

// validEncoding reports whether a CSV source can be read in the named encoding: the UTF-16
// forms, or any WHATWG label (utf-8, windows-1252, iso-8859-15, latin1, …).
func validEncoding(name string) bool {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "utf-16", "utf16", "utf-16le", "utf-16be":
		return true
	}
	_, err := htmlindex.Get(name)
	return err == nil
}

// validDelimiter reports whether a CSV delimiter can be used: one ASCII character other
// than a quote or a line break, or "tab".
func validDelimiter(d string) bool {
	switch d {
	case "", "tab", `\t`, "\t":
		return true
	}
	return len(d) == 1 && d[0] < utf8.RuneSelf && d[0] != '"' && d[0] != '\n' && d[0] != '\r'
}

// SQL drivers a sql source or write-back accepts.
var drivers = []string{"pgx", "postgres", "postgresql", "mysql", "sqlite"}

func checkDriver(p *problems, key, d string) {
	if d == "" {
		p.add(key, "", "missing: pgx (Postgres), mysql (MySQL, MariaDB) or sqlite")
		return
	}
	if !slices.Contains(drivers, d) {
		p.add(key, d, "want pgx (Postgres), mysql (MySQL, MariaDB) or sqlite")
	}
}

func checkSource(p *problems, key string, s Source) {
	only := func(field, kind string, set bool) {
		if set {
			p.add(key+"."+field, "", "only for a %s source", kind)
		}
	}
	file := s.Kind == KindCSV || s.Kind == KindXLSX || (s.Kind == "" && s.Path != "")
	switch {
	case file:
		if s.Path == "" {
			p.add(key+".path", "", "missing: the %s file to read", s.Kind)
		}
		only("driver", KindSQL, s.Driver != "")
		only("dsn", KindSQL, s.DSN != "" || s.DSNEnv != "" || s.DSNFile != "")
		only("query", KindSQL, s.Query != "")
		only("watermark_column", KindSQL, s.WatermarkColumn != "")
		if s.Kind == KindCSV {
			only("sheet", KindXLSX, s.Sheet != "")
			only("sheet_index", KindXLSX, s.SheetIndex != 0)
		}
		if s.Kind == KindXLSX {
			only("stray_lines", KindCSV, s.StrayLines != "")
			only("encoding", KindCSV, s.Encoding != "")
			only("delimiter", KindCSV, s.Delimiter != "")
		}
		if s.StrayLines != "" && s.StrayLines != sources.StrayDecode && s.StrayLines != sources.StrayReject {
			p.add(key+".stray_lines", s.StrayLines, "want %q or %q", sources.StrayDecode, sources.StrayReject)
		}
		if !validEncoding(s.Encoding) {
			p.add(key+".encoding", s.Encoding, "unknown encoding: want utf-8, windows-1252, iso-8859-15, utf-16le, utf-16be or another WHATWG label")
		}
		if !validDelimiter(s.Delimiter) {
			p.add(key+".delimiter", s.Delimiter, `want one ASCII character other than a quote or a line break, or "tab"`)
		}
		if s.SheetIndex < 0 {
			p.add(key+".sheet_index", strconv.Itoa(s.SheetIndex), "must not be negative")
		}
		if s.HeaderRow < 0 {
			p.add(key+".header_row", strconv.Itoa(s.HeaderRow), "must not be negative (0 = the first non-empty row)")
		}
	case s.Kind == KindSQL:
		checkDriver(p, key+".driver", s.Driver)
		if s.DSN == "" && s.DSNEnv == "" && s.DSNFile == "" {
			p.add(key+".dsn", "", "missing (or dsn_env, or dsn_file)")
		}
		if strings.TrimSpace(s.Query) == "" {
			p.add(key+".query", "", "missing: the SELECT that reads the contacts")
		} else if err := sources.CheckReadQuery(s.Driver, s.Query); err != nil {
			p.add(key+".query", s.Query, "%v", err)
		}
		only("path", "csv or xlsx", s.Path != "")
		only("encoding", KindCSV, s.Encoding != "")
		only("stray_lines", KindCSV, s.StrayLines != "")
		only("delimiter", KindCSV, s.Delimiter != "")
		only("sheet", KindXLSX, s.Sheet != "")
		only("header_row", "csv or xlsx", s.HeaderRow != 0)
	case s.Kind == "":
		p.add(key+".path", "", "missing: the file to read (or kind = \"sql\" with driver, dsn and query)")
	default:
		p.add(key+".kind", s.Kind, "want csv, xlsx or sql")
	}
}

func checkTimeZone(p *problems, key, tz string) {
	if _, err := time.LoadLocation(tz); err != nil {
		p.add(key, tz, "unknown time zone")
	}
}

// checkBaseURL refuses anything but an absolute http(s) URL, and plain http to anything but
// a loopback address: the API key travels in every request.
func checkBaseURL(p *problems, key, raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		p.add(key, raw, "want an absolute https:// URL")
		return
	}
	if u.User != nil {
		p.add(key, u.Redacted(), "credentials do not belong in the URL: use api.user_id and api.api_key")
		return
	}
	if u.Scheme == "http" && !IsLoopback(u.Hostname()) {
		p.add(key, raw, "plain http is refused for a non-loopback host (the API key would travel in clear text): use https")
	}
}

// IsLoopback reports whether host is "localhost" or a loopback IP address (127.0.0.0/8, ::1).
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

var cronFields = [...]string{"minute", "hour", "day of month", "month", "day of week"}

// checkSchedule validates a cron spec as robfig/cron's ParseStandard does, but names the
// field that is wrong: `"0 25 * * *": hour out of range`.
func checkSchedule(p *problems, key, spec, tzKey string) {
	if _, err := ParseSchedule(spec); err != nil {
		p.add(key, spec, "%s", scheduleReason(spec, tzKey))
	}
}

// ParseSchedule parses a 5-field cron spec or a descriptor (@daily, @every 1h) as the
// worker's schedules do. Time zones are configured separately (time_zone keys), not with a
// CRON_TZ= prefix.
func ParseSchedule(spec string) (cron.Schedule, error) {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, fmt.Errorf("time zone prefix in schedule %q", spec)
	}
	return cron.ParseStandard(spec)
}

func scheduleReason(spec, tzKey string) string {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return "put the time zone in " + tzKey
	}
	if strings.HasPrefix(spec, "@") {
		if strings.HasPrefix(spec, "@every") {
			return `want "@every <duration>", e.g. "@every 1h"`
		}
		return "unknown descriptor: want @yearly, @monthly, @weekly, @daily, @hourly or @every <duration>"
	}
	fields := strings.Fields(spec)
	if len(fields) != len(cronFields) {
		return fmt.Sprintf("want 5 fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	for i, f := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = f
		_, err := cron.ParseStandard(strings.Join(probe, " "))
		if err == nil {
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "above maximum") || strings.Contains(msg, "below minimum") {
			return cronFields[i] + " out of range"
		}
		return fmt.Sprintf("invalid %s %q", cronFields[i], f)
	}
	return "not a valid schedule"
}
