package jobs

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/subsync/subsync/internal/check"
	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/internal/secret"
	"github.com/subsync/subsync/sources"
)

// Validate checks cfg with its defaults filled, the subscriber service client's settings
// (sink.Config.Validate, when a base URL is set) and every source's (sources.Config.Validate) included, but not the
// credentials, which only what calls the service needs. Every problem is a
// *check.FieldError naming the field ("Syncs[1].Schedule", "Sink.Timeout"). [Open] runs it,
// and so does `subsync config check`, so a configuration the check passes is one the
// worker starts with.
func (c Config) Validate() error {
	c = c.withDefaults()
	var p check.Problems
	if c.Sink.BaseURL != "" {
		// A Runtime that only reads history needs no client: with no base URL, Run and
		// the jobs fail instead (sink.New says why).
		p.Nest("Sink", c.Sink.Validate())
	}
	if c.DatabaseURL == "" && c.DataDir == "" {
		p.Add("DataDir", "", "missing: the directory of the embedded database")
	}
	if c.DatabaseURL != "" {
		u, err := url.Parse(c.DatabaseURL)
		switch {
		case err != nil:
			p.Add("DatabaseURL", secret.DSN("pgx", c.DatabaseURL), "not a URL")
		case u.Scheme != "postgres" && u.Scheme != "postgresql":
			p.Add("DatabaseURL", secret.DSN("pgx", c.DatabaseURL), "want a postgres:// URL (leave it empty for the embedded SQLite database)")
		}
	}
	validateSharedDirs(&p, c.SharedDirs)
	atLeastOne(&p, "Concurrency", c.Concurrency)
	atLeastOne(&p, "BatchesInFlight", c.BatchesInFlight)
	if c.MetricsAddr != "" {
		if _, port, err := net.SplitHostPort(c.MetricsAddr); err != nil || port == "" {
			p.Add("MetricsAddr", c.MetricsAddr, `want host:port (e.g. "127.0.0.1:9464")`)
		}
	}
	if c.ShutdownTimeout <= 0 {
		p.Add("ShutdownTimeout", c.ShutdownTimeout.String(), "must be positive")
	}
	if c.LeaseTTL < 100*time.Millisecond {
		p.Add("LeaseTTL", c.LeaseTTL.String(), "must be at least 100ms")
	}

	validateSyncs(&p, c.Syncs)
	for _, name := range slices.Sorted(maps.Keys(c.Sources)) {
		key := "Sources[" + name + "]"
		if !nameRE.MatchString(name) {
			p.Add(key, "", "name the source with letters, digits, '-', '_' and '.' only")
		}
		p.Nest(key, c.Sources[name].Validate())
	}

	st := c.StatusPull
	checkSchedule(&p, "StatusPull", st.Schedule, st.TimeZone)
	if _, tzErr := time.LoadLocation(st.TimeZone); tzErr == nil && st.ReconcileSchedule != "" {
		if _, err := ParseSchedule(st.ReconcileSchedule, st.TimeZone); err != nil {
			p.Add("StatusPull.ReconcileSchedule", st.ReconcileSchedule, "%s", scheduleReason(st.ReconcileSchedule))
		}
	}
	if st.Overlap < 0 {
		p.Add("StatusPull.Overlap", st.Overlap.String(), "must not be negative")
	}
	p.Nest("StatusPull.WriteBack", st.WriteBack.validate())
	checkSchedule(&p, "Retention", c.Retention.Schedule, c.Retention.TimeZone)
	return p.Err()
}

// validateSyncs checks every sync: a name used once, its schedules, list, source and
// policies.
func validateSyncs(p *check.Problems, syncs []SyncSpec) {
	seen := map[string]bool{}
	for i, s := range syncs {
		key := fmt.Sprintf("Syncs[%d]", i)
		switch {
		case s.Name == "":
			p.Add(key+".Name", "", "missing")
		case !nameRE.MatchString(s.Name):
			p.Add(key+".Name", s.Name, "use letters, digits, '-', '_' and '.' only")
		case seen[s.Name]:
			p.Add(key+".Name", s.Name, "already used by an earlier sync")
		}
		seen[s.Name] = true
		checkSchedule(p, key, s.Schedule, s.TimeZone)
		if _, tzErr := time.LoadLocation(s.TimeZone); tzErr == nil && s.VerifyEvery != "" {
			if _, err := ParseSchedule(s.VerifyEvery, s.TimeZone); err != nil {
				p.Add(key+".VerifyEvery", s.VerifyEvery, "%s", scheduleReason(s.VerifyEvery))
			}
		}
		if s.ListID <= 0 {
			p.Add(key+".ListID", listValue(s.ListID), "missing: the id of the subscriber list to sync into")
		}
		p.Nest(key+".Source", s.Source.Validate())
		if err := pipeline.CheckSuppression(s.Suppression); err != nil {
			p.Add(key+".Suppression", s.Suppression, "%v", err)
		}
		if s.Removed != RemovedKeep && s.Removed != RemovedUnsubscribe {
			p.Add(key+".Removed", s.Removed, "want %q or %q", RemovedKeep, RemovedUnsubscribe)
		}
		if _, err := RemovalLimit(s.MaxRemovals, 0); err != nil {
			p.Add(key+".MaxRemovals", s.MaxRemovals, "%v", err)
		}
	}
}

func (w WriteBackSpec) validate() error {
	var p check.Problems
	switch w.Kind {
	case "":
		if w.Statement != "" || w.Path != "" || w.DSN != "" || w.Driver != "" {
			p.Add("Kind", "", "missing: %q or %q", WriteBackSQL, WriteBackCSV)
		}
	case WriteBackSQL:
		sources.CheckDriver(&p, "Driver", w.Driver)
		if w.DSN == "" {
			p.Add("DSN", "", "missing")
		}
		if strings.TrimSpace(w.Statement) == "" {
			p.Add("Statement", "", "missing")
		} else if err := CheckWriteBackStatement(w.Statement); err != nil {
			p.Add("Statement", w.Statement, "%v", err)
		}
		if w.Path != "" {
			p.Add("Path", w.Path, "only for a csv write-back")
		}
		if w.EmailColumn != "" || w.StatusColumn != "" || w.ChangedAtColumn != "" {
			p.Add("EmailColumn", w.EmailColumn, "email_column, status_column and changed_at_column are only for a csv write-back")
		}
	case WriteBackCSV:
		if w.Path == "" {
			p.Add("Path", "", "missing: the CSV file to append the changes to (or, with email_column, to update)")
		}
		if w.EmailColumn == "" && (w.StatusColumn != "" || w.ChangedAtColumn != "") {
			p.Add("EmailColumn", "", "missing: status_column and changed_at_column update the file's rows, found by their email_column")
		}
		if w.Statement != "" || w.Driver != "" || w.DSN != "" {
			p.Add("Kind", w.Kind, "driver, dsn and statement are only for a sql write-back")
		}
	default:
		p.Add("Kind", w.Kind, "want %q or %q", WriteBackSQL, WriteBackCSV)
	}
	if w.UnmatchedRetries < 0 {
		p.Add("UnmatchedRetries", fmt.Sprint(w.UnmatchedRetries), "must not be negative")
	}
	return p.Err()
}

// nameRE is what a sync or a named source may be called: it goes on command lines and in
// job args.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func listValue(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

func atLeastOne(p *check.Problems, field string, v int) {
	if v < 1 {
		p.Add(field, strconv.Itoa(v), "must be at least 1")
	}
}

// checkSchedule reports the problems of the Schedule and TimeZone fields under prefix; an
// empty schedule is none (on demand only).
func checkSchedule(p *check.Problems, prefix, spec, tz string) {
	if _, err := time.LoadLocation(tz); err != nil {
		p.Add(prefix+".TimeZone", tz, "unknown time zone")
		return
	}
	if spec == "" {
		return
	}
	if _, err := ParseSchedule(spec, tz); err != nil {
		p.Add(prefix+".Schedule", spec, "%s", scheduleReason(spec))
	}
}
