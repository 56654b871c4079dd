package config

import (
	"errors"
	"strings"
	"unicode"

	"github.com/subsync/subsync/internal/check"
)

// fields records the problems of a validation by the packages that own the settings
// (jobs.Config.Validate, sink.Config.CheckCredentials), each under the TOML key the user
// typed. This is the one place where a Go field becomes a TOML key.
func (p *problems) fields(err error) {
	for _, e := range check.Fields(err) {
		var fe *check.FieldError
		if !errors.As(e, &fe) {
			*p = append(*p, &FieldError{Reason: e.Error()})
			continue
		}
		key := tomlKey(fe.Field)
		if k, ok := fullKeyNames[key]; ok {
			key = k
		}
		if strings.HasSuffix(key, ".dsn") && p.has(key+"_env", key+"_file", key) {
			continue // resolving dsn_env or dsn_file already said what is wrong
		}
		*p = append(*p, &FieldError{Key: key, Value: fe.Value, Reason: reason(key, fe.Reason)})
	}
}

// has reports whether a problem of one of the keys is recorded.
func (p problems) has(keys ...string) bool {
	for _, e := range p {
		if fe, ok := e.(*FieldError); ok {
			for _, k := range keys {
				if fe.Key == k {
					return true
				}
			}
		}
	}
	return false
}

// reason adds to a problem what the configuration file offers instead: another key for a
// missing one, "off" for an optional listener.
func reason(key, r string) string {
	if key == "worker.metrics_address" {
		return r + `, or "off"`
	}
	if r != "missing" {
		return r
	}
	switch {
	case key == "api.user_id":
		return "missing: set it in the file or in " + EnvUserID
	case key == "api.api_key":
		return "missing: set " + EnvAPIKey + " (or api.api_key_file, or api.api_key)"
	case strings.HasSuffix(key, ".dsn"):
		return "missing (or dsn_env, or dsn_file)"
	}
	return r
}

// keyNames are the Go fields whose TOML key is not their name in snake case, or that sit in
// a table of their own in the file.
var keyNames = map[string]string{
	"Sink":            "api",
	"DatabaseURL":     "database.url",
	"DataDir":         "database.data_dir",
	"SharedDirs":      "database.shared_dirs",
	"Concurrency":     "worker.concurrency",
	"BatchesInFlight": "worker.batches_in_flight",
	"ShutdownTimeout": "worker.shutdown_timeout",
	"MetricsAddr":     "worker.metrics_address",
	"MemoryBudget":    "worker.memory_budget",
	"StatusPull":      "status",
	"ListID":          "list",
}

// fullKeyNames are the keys of client settings that the file holds in another table.
var fullKeyNames = map[string]string{
	"api.status_max_pages": "status.max_pages",
	"api.status_max_bytes": "status.max_megabytes",
	"api.status_max_time":  "status.max_time",
}

// tomlKey turns the path of a jobs.Config field ("Syncs[1].Source.DSN", "Sources[crm].Query",
// "Sink.RetryAfterCap") into the key of the configuration file ("syncs[1].source.dsn",
// "sources.crm.query", "api.retry_after_cap").
func tomlKey(field string) string {
	var out []string
	for field != "" {
		name := field
		index := ""
		if i := strings.IndexAny(field, ".["); i >= 0 {
			name, field = field[:i], field[i:]
			if field[0] == '[' {
				end := strings.IndexByte(field, ']')
				if end < 0 {
					end = len(field) - 1
				}
				index, field = field[1:end], field[end+1:]
			}
			field = strings.TrimPrefix(field, ".")
		} else {
			field = ""
		}
		key, ok := keyNames[name]
		if !ok {
			key = snake(name)
		}
		switch {
		case index == "":
		case name == "Sources":
			key += "." + index
		default:
			key += "[" + index + "]"
		}
		out = append(out, key)
	}
	return strings.Join(out, ".")
}

// snake writes a Go name in snake case: RetryAfterCap → retry_after_cap, APIKey → api_key.
func snake(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || (nextLower && unicode.IsUpper(r[i-1])) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
