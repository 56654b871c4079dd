package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/config"
	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
)

const (
	testKey  = "s3cr3t-api-key"
	testPass = "db-pa55word"
)

// env returns a getenv over a fixed map, so tests stay parallel.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// creds is the environment of a configuration that only lacks its secrets.
var creds = env(config.EnvUserID, "u1", config.EnvAPIKey, testKey)

// write puts a configuration file into a fresh directory and returns its path.
func write(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "subsync.toml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

func TestLoadExample(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "config.example.toml")
	cfg, err := config.Load(path, env(config.EnvUserID, "u1", config.EnvAPIKey, testKey, "CRM_DSN", "postgres://crm:"+testPass+"@crm/crm"))
	require.NoError(t, err)
	require.Len(t, cfg.Syncs, 1, "the SQL sync is shown commented out")
	require.Equal(t, "newsletter-export", cfg.Syncs[0].Name)
	require.Equal(t, filepath.Join("..", "exports", "newsletter.csv"), cfg.Syncs[0].Source.Path)

	// The example documents the defaults: the sections without site-specific values equal
	// what an empty file gives.
	def, err := config.Parse("", nil, creds)
	require.NoError(t, err)
	require.Equal(t, def.API.BaseURL, cfg.API.BaseURL)
	require.Equal(t, def.API.RequestsPerSecond, cfg.API.RequestsPerSecond)
	require.Equal(t, def.API.MaxInFlight, cfg.API.MaxInFlight)
	require.Equal(t, def.API.Timeout, cfg.API.Timeout)
	require.Equal(t, def.API.MaxAttempts, cfg.API.MaxAttempts)
	require.Equal(t, def.API.MaxRetryTime, cfg.API.MaxRetryTime)
	require.Equal(t, def.API.RetryAfterCap, cfg.API.RetryAfterCap)
	require.Equal(t, def.Worker, cfg.Worker)
	require.Equal(t, def.Status.Schedule, cfg.Status.Schedule)
	require.Equal(t, def.Status.TimeZone, cfg.Status.TimeZone)
	require.Equal(t, def.Status.Overlap, cfg.Status.Overlap)

	require.NoError(t, cfg.CheckCredentials())

	// Without the secrets the example loads, and names exactly what is missing to call the
	// service.
	cfg, err = config.Load(path, env())
	require.NoError(t, err)
	require.EqualError(t, cfg.CheckCredentials(), path+": api.user_id: missing: set it in the file or in SUBSYNC_USER_ID\n"+
		path+": api.api_key: missing: set SUBSYNC_API_KEY (or api.api_key_file, or api.api_key)")
}

// TestExampleDocumentsEveryKey fails when an option is added to Config but not to
// config.example.toml.
func TestExampleDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "config.example.toml"))
	require.NoError(t, err)
	// A key is documented when a line assigns it, commented out or not, under its table
	// header (also commented out or not).
	documented := map[string]bool{}
	table := ""
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimPrefix(l, "# ")
		if m := tableRE.FindStringSubmatch(l); m != nil {
			name := m[1]
			if rest, ok := strings.CutPrefix(name, "sources."); ok {
				// A named source: [sources.crm] documents the keys of every source.
				documented["sources"] = true
				name = "sources.*" + rest[strings.IndexByte(rest+".", '.'):]
			}
			table = name + "."
			documented[name] = true
			continue
		}
		if m := keyRE.FindStringSubmatch(l); m != nil {
			documented[table+m[1]] = true
		}
	}

	var want []string
	var keys func(prefix string, t reflect.Type)
	keys = func(prefix string, t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("toml")
			if tag == "" || tag == "-" {
				continue
			}
			want = append(want, prefix+tag)
			ft := f.Type
			sub := prefix + tag + "."
			switch ft.Kind() {
			case reflect.Slice:
				ft = ft.Elem()
			case reflect.Map:
				ft, sub = ft.Elem(), prefix+tag+".*."
			}
			if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[config.Mapping]() {
				keys(sub, ft)
			}
		}
	}
	keys("", reflect.TypeFor[config.Config]())
	for _, k := range want {
		require.True(t, documented[k], "config.example.toml does not document %s", k)
	}
}

var (
	tableRE = regexp.MustCompile(`^\[\[?([a-z_.]+)\]\]?$`)
	keyRE   = regexp.MustCompile(`^([a-z_]+) = `)
)

func TestValidationNamesKeyValueAndReason(t *testing.T) {
	t.Parallel()
	const wbSQL = "[status.write_back]\nkind = \"sql\"\ndriver = \"pgx\"\ndsn = \"postgres://crm\"\n"
	const sync = `
[[syncs]]
name = "a"
list = 1
source = { path = "a.csv" }
`
	tests := []struct {
		name string
		toml string
		want string // the exact problem line, without the file prefix
	}{
		{"hour out of range", sync + `
[[syncs]]
name = "b"
list = 1
schedule = "0 25 * * *"
source = { path = "b.csv" }
`, `syncs[1].schedule: "0 25 * * *": hour out of range`},
		{"minute", sync + "schedule = \"61 * * * *\"\n", `syncs[0].schedule: "61 * * * *": minute out of range`},
		{"day of week", sync + "schedule = \"0 0 * * x\"\n", `syncs[0].schedule: "0 0 * * x": invalid day of week "x"`},
		{"field count", sync + "schedule = \"0 0 * *\"\n", `syncs[0].schedule: "0 0 * *": want 5 fields (minute hour day-of-month month day-of-week), got 4`},
		{"descriptor", sync + "schedule = \"@nightly\"\n", `syncs[0].schedule: "@nightly": unknown descriptor`},
		{"time zone prefix", sync + "schedule = \"CRON_TZ=UTC 0 0 * * *\"\n", `syncs[0].schedule: "CRON_TZ=UTC 0 0 * * *": put the time zone in time_zone, not in the schedule`},
		{"time zone", sync + "time_zone = \"Mars/Olympus\"\n", `syncs[0].time_zone: "Mars/Olympus": unknown time zone`},
		{"status schedule", "[status]\nschedule = \"* * * 13 *\"\n", `status.schedule: "* * * 13 *": month out of range`},
		{"plain http", "[api]\nbase_url = \"http://example.com/api/public/v2\"\n", `api.base_url: "http://example.com/api/public/v2": plain http is refused for a non-loopback host`},
		{"plain http legacy", "[api]\nlegacy_base_url = \"http://10.0.0.1/api/v3\"\n", `api.legacy_base_url: "http://10.0.0.1/api/v3": plain http is refused`},
		{"not a url", "[api]\nbase_url = \"subscribers.example.com\"\n", `api.base_url: "subscribers.example.com": want an absolute https:// URL`},
		{"credentials in url", "[api]\nbase_url = \"https://u:" + testKey + "@example.com/v2\"\n", `api.base_url: "https://u:xxxxx@example.com/v2": credentials do not belong in the URL`},
		{"duration without unit", "[api]\ntimeout = 30\n", `api.timeout: "30": a duration needs a unit, e.g. "30s"`},
		{"bad duration", "[api]\ntimeout = \"30 secs\"\n", `api.timeout: "30 secs": not a duration`},
		{"negative duration", "[api]\ntimeout = \"-1s\"\n", `api.timeout: "-1s": must be positive`},
		{"max in flight", "[api]\nmax_in_flight = -1\n", `api.max_in_flight: "-1": must be at least 1`},
		{"status feed pages", "[status]\nmax_pages = -1\n", `status.max_pages: "-1": must be at least 1`},
		{"status feed time", "[status]\nmax_time = \"-1m\"\n", `status.max_time: "-1m0s": must be positive`},
		{"wrong type", "[worker]\nconcurrency = \"four\"\n", `worker.concurrency: incompatible types`},
		{"metrics address", "[worker]\nmetrics_address = \"9464\"\n", `worker.metrics_address: "9464": want host:port`},
		{"shared dir root", "[database]\nshared_dirs = [\"/srv/share\", \"/mnt/../\"]\n",
			`database.shared_dirs[1]: "/mnt/../": the root directory would declare every file shared: name the shared storage's directories`},
		{"shared dir empty", "[database]\nshared_dirs = [\"\"]\n",
			`database.shared_dirs[0]: empty: want the directory of shared storage every worker reads at the same path`},
		{"database url", "[database]\nurl = \"mysql://root:" + testPass + "@db/x\"\n", `database.url: "mysql://root:xxxxx@db/x": want a postgres:// URL`},
		{"unknown key", sync + "schedul = \"@daily\"\n", `syncs[0].schedul: unknown key`},
		{"unknown nested key", sync + "\n[[syncs]]\nname = \"b\"\nlist = 2\n[syncs.source]\npath = \"b.csv\"\nsheet_nmae = \"x\"\n", `syncs[1].source.sheet_nmae: unknown key`},
		{"unknown table", "[apii]\nbase_url = \"x\"\n", `apii: unknown key`},
		{"duplicate name", sync + sync, `syncs[1].name: "a": already used by an earlier sync`},
		{"missing list", "[[syncs]]\nname = \"a\"\nsource = { path = \"a.csv\" }\n", `syncs[0].list: missing`},
		{"no source", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { encoding = \"latin1\" }\n", `syncs[0].source.path: missing: the file to read`},
		{"source kind", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { kind = \"json\", path = \"a.json\" }\n", `syncs[0].source.kind: "json": want csv, xlsx or sql`},
		{"encoding", "[[syncs]]\nname = \"a\"\nlist = 1\n[syncs.source]\npath = \"b.csv\"\nencoding = \"klingon\"\n", `syncs[0].source.encoding: "klingon": unknown encoding`},
		{"delimiter", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { path = \"a.csv\", delimiter = \";;\" }\n", `syncs[0].source.delimiter: ";;": want one ASCII character`},
		{"sql needs query", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { kind = \"sql\", driver = \"pgx\", dsn = \"postgres://x\" }\n", `syncs[0].source.query: missing`},
		{"sql driver", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { kind = \"sql\", driver = \"oracle\", dsn = \"x\", query = \"select 1\" }\n", `syncs[0].source.driver: "oracle": want pgx (Postgres), mysql (MySQL, MariaDB) or sqlite`},
		{"sql drop", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { kind = \"sql\", driver = \"mysql\", dsn = \"x\", query = \"DROP TABLE src\" }\n",
			`syncs[0].source.query: "DROP TABLE src": the source query must be one SELECT (or WITH … SELECT) statement that only reads: it starts with DROP, not SELECT or WITH`},
		{"sql two statements", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { kind = \"sql\", driver = \"mysql\", dsn = \"x\", query = \"SELECT 1; DROP TABLE src\" }\n",
			`syncs[0].source.query: "SELECT 1; DROP TABLE src": the source query must be one SELECT (or WITH … SELECT) statement that only reads: it holds more than one statement`},
		{"sql attach", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { kind = \"sql\", driver = \"sqlite\", dsn = \"x\", query = \"ATTACH 'y.db' AS y\" }\n",
			`it starts with ATTACH, not SELECT or WITH`},
		{"dsn env unset", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { kind = \"sql\", driver = \"pgx\", dsn_env = \"NOPE\", query = \"select 1\" }\n", `syncs[0].source.dsn_env: "NOPE": environment variable is not set`},
		{"stray lines", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { path = \"a.csv\", stray_lines = \"ignore\" }\n", `syncs[0].source.stray_lines: "ignore": want "decode" or "reject"`},
		{"csv-only key", "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { path = \"a.xlsx\", delimiter = \";\" }\n", `syncs[0].source.delimiter: only for a csv source`},
		{"suppression", sync + "suppression = \"ignore\"\n", `syncs[0].suppression: "ignore": want "skip" or "update-keep-status"`},
		{"mapping file", sync + "mapping = \"nope.toml\"\n", `syncs[0].mapping: "`},
		{"mapping missing file", sync + "mapping = \"nope.toml\"\n", `": cannot read: no such file or directory`},
		{"write back kind", "[status.write_back]\nkind = \"email\"\n", `status.write_back.kind: "email": want "sql" or "csv"`},
		{"write back parameter", wbSQL + "statement = \"update c set s = :state where email = :email\"\n",
			`status.write_back.statement: "update c set s = :state where email = :email": unknown parameter :state`},
		{"write back positional", wbSQL + "statement = \"update c set s = ? where email = ?\"\n",
			`status.write_back.statement: "update c set s = ? where email = ?": positional placeholder`},
		{"write back no parameter", wbSQL + "statement = \"update c set s = 'x'\"\n",
			`status.write_back.statement: "update c set s = 'x'": the statement uses no parameter`},
		{"both keys", "[api]\napi_key = \"a\"\napi_key_file = \"k\"\n", `api.api_key: set api.api_key or api.api_key_file, not both`},
		{"syntax", "[api\n", `expected`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := write(t, tt.toml)
			_, err := config.Load(path, creds)
			require.Error(t, err)
			var cerr *config.Error
			require.ErrorAs(t, err, &cerr)
			var lines []string
			for _, p := range cerr.Problems {
				lines = append(lines, p.Error())
			}
			found := false
			for _, l := range lines {
				if strings.HasPrefix(l, tt.want) || strings.HasSuffix(l, tt.want) || (!strings.Contains(tt.want, ": ") && strings.Contains(l, tt.want)) {
					found = true
				}
			}
			require.True(t, found, "got problems %q, want one starting with %q", lines, tt.want)
			require.True(t, strings.HasPrefix(err.Error(), path), "got %q, want it to start with the file name", err.Error())
			require.NotContains(t, err.Error(), testKey)
			require.NotContains(t, err.Error(), testPass)
		})
	}
}

func TestProblemsCarryLinesAndAllAreListed(t *testing.T) {
	t.Parallel()
	path := write(t, "[api]\ntimeout = \"soon\"\n")
	_, err := config.Load(path, creds)
	require.EqualError(t, err, path+`:2: api.timeout: "soon": not a duration (write it like "30s", "5m" or "2h")`)

	path = write(t, "[worker]\nconcurrency = 0\nbatches_in_flight = -2\n[api]\nmax_attempts = -1\n")
	_, err = config.Load(path, creds)
	require.EqualError(t, err, path+`: api.max_attempts: "-1": must be at least 1`+"\n"+path+`: worker.batches_in_flight: "-2": must be at least 1`)
	var fe *config.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "api.max_attempts", fe.Key)
}

func TestLoopbackHTTPAllowed(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://127.0.0.1:8080/api/public/v2", "http://127.9.9.9/v2", "http://[::1]:80/v2", "http://localhost:1/v2", "http://LOCALHOST/v2", "https://example.com/v2/"} {
		cfg, err := config.Parse("", []byte(fmt.Sprintf("[api]\nbase_url = %q\nlegacy_base_url = %q\n", u, u)), creds)
		require.NoError(t, err, u)
		require.False(t, strings.HasSuffix(cfg.API.BaseURL, "/"), "got %q, want the trailing slash trimmed", cfg.API.BaseURL)
	}
	for _, u := range []string{"http://example.com/v2", "http://10.0.0.1/v2", "http://127.0.0.1.nip.io/v2", "http://[::2]/v2", "ftp://127.0.0.1/v2"} {
		_, err := config.Parse("", []byte(fmt.Sprintf("[api]\nbase_url = %q\n", u)), creds)
		require.ErrorContains(t, err, "api.base_url: "+fmt.Sprintf("%q", u), u)
	}
}

func TestEnvironmentWinsForSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key"), []byte("  from-file\n"), 0o600))
	path := filepath.Join(dir, "subsync.toml")
	require.NoError(t, os.WriteFile(path, []byte(`
[api]
user_id = "file-user"
api_key_file = "key"
[database]
url = "postgres://file@db/x"
`), 0o600))

	cfg, err := config.Load(path, nil)
	if os.Getenv(config.EnvAPIKey) == "" && os.Getenv(config.EnvUserID) == "" && os.Getenv(config.EnvDatabaseURL) == "" {
		require.NoError(t, err)
		require.Equal(t, "from-file", cfg.API.APIKey, "api_key_file is relative to the config file and trimmed")
	}

	cfg, err = config.Load(path, env())
	require.NoError(t, err)
	require.Equal(t, "file-user", cfg.API.UserID)
	require.Equal(t, "from-file", cfg.API.APIKey)
	require.Equal(t, "postgres://file@db/x", cfg.Database.URL)
	require.Equal(t, filepath.Join(dir, "data"), cfg.Database.DataDir)

	cfg, err = config.Load(path, env(config.EnvUserID, "env-user", config.EnvAPIKey, "env-key", config.EnvDatabaseURL, "postgres://env@db/y"))
	require.NoError(t, err)
	require.Equal(t, "env-user", cfg.API.UserID)
	require.Equal(t, "env-key", cfg.API.APIKey)
	require.Equal(t, "postgres://env@db/y", cfg.Database.URL)

	// An environment key makes an unreadable key file irrelevant.
	require.NoError(t, os.Remove(filepath.Join(dir, "key")))
	_, err = config.Load(path, env(config.EnvAPIKey, "env-key"))
	require.NoError(t, err)
	_, err = config.Load(path, env())
	require.ErrorContains(t, err, `api.api_key_file: "`+filepath.Join(dir, "key")+`": cannot read: no such file or directory`)
}

func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	dsnEnv := "CRM_DSN"
	cfg, err := config.Parse("", []byte(`
[database]
url = "postgres://subsync:`+testPass+`@db:5432/subsync?sslmode=disable"
[[syncs]]
name = "crm"
list = 1
source = { kind = "sql", driver = "mysql", dsn_env = "CRM_DSN", query = "select email from c" }
[[syncs]]
name = "kv"
list = 1
source = { kind = "sql", driver = "pgx", dsn = "host=db user=x password=`+testPass+` dbname=y", query = "select email from c" }
[status.write_back]
kind = "sql"
driver = "pgx"
dsn = "postgres://db/x?password=`+testPass+`"
statement = "update c set unsubscribed = true where email = :email"
`), env(config.EnvUserID, "u", config.EnvAPIKey, testKey, dsnEnv, "crm:"+testPass+"@tcp(db:3306)/crm"))
	require.NoError(t, err)
	require.Equal(t, testKey, cfg.API.APIKey, "the key itself is usable")

	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	log.Info("loaded", "config", cfg, "api", cfg.API, "db", cfg.Database)
	log.Info("loaded", "config", *cfg)
	outputs := map[string]string{
		"String":  cfg.String(),
		"%v":      fmt.Sprintf("%v", cfg),
		"%+v":     fmt.Sprintf("%+v", *cfg),
		"%#v":     fmt.Sprintf("%#v", *cfg),
		"%s":      fmt.Sprintf("%s", *cfg),
		"API %+v": fmt.Sprintf("%+v %#v", cfg.API, cfg.API),
		"DB %+v":  fmt.Sprintf("%+v %#v", cfg.Database, cfg.Database),
		"source":  fmt.Sprintf("%v %+v %#v", cfg.Syncs[0].Source, cfg.Syncs[1].Source, cfg.Syncs[1]),
		"wb":      fmt.Sprintf("%v %#v", cfg.Status.WriteBack, cfg.Status),
		"slog":    logs.String(),
		"json":    string(mustJSON(t, cfg)) + string(mustJSON(t, cfg.API)) + string(mustJSON(t, cfg.Syncs)) + string(mustJSON(t, cfg.Status)),
	}
	for name, out := range outputs {
		require.NotContains(t, out, testKey, name)
		require.NotContains(t, out, testPass, name)
	}
	require.Contains(t, outputs["String"], "postgres://subsync:xxxxx@db:5432/subsync")
	require.Contains(t, outputs["String"], `api_key = "xxxxx"`)
	require.Contains(t, outputs["slog"], `"api_key":"xxxxx"`)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestDefaultsAndRelativePaths(t *testing.T) {
	t.Parallel()
	path := write(t, `
[worker]
metrics_address = "off"
[status]
schedule = "off"
[[syncs]]
name = "x"
list = 7
[syncs.source]
path = "in/Contacts.XLSX"
`)
	cfg, err := config.Load(path, creds)
	require.NoError(t, err)
	dir := filepath.Dir(path)
	s := cfg.Syncs[0]
	require.Equal(t, config.KindXLSX, s.Source.Kind)
	require.Equal(t, filepath.Join(dir, "in", "Contacts.XLSX"), s.Source.Path)
	require.Equal(t, 0, s.Source.HeaderRow, "0: the first non-empty row")
	require.Equal(t, jobs.TimeZoneDefault, s.TimeZone)
	require.Equal(t, pipeline.SuppressionSkip, s.Suppression)
	require.True(t, s.Mapping.IsZero())
	require.Equal(t, config.Off, cfg.Worker.MetricsAddress)
	require.Equal(t, config.Off, cfg.Status.Schedule)
	require.Equal(t, config.Duration(sink.TimeoutDefault), cfg.API.Timeout)
	require.Equal(t, config.ReconcileScheduleDefault, cfg.Status.ReconcileSchedule, "reconciliation is on by default")
	require.Equal(t, "@daily", cfg.JobsConfig().StatusPull.ReconcileSchedule)
	require.Equal(t, 30*time.Second, cfg.API.Timeout.D())
	require.Equal(t, config.BaseURLDefault, cfg.API.BaseURL)
}

func TestMappingInlineOrFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crm.mapping.toml"), []byte(`
[columns]
"E-post" = "email"
"Fornavn" = "firstname"
`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.mapping.toml"), []byte("[columns]\nx = \"nowhere\"\n"), 0o600))
	path := filepath.Join(dir, "subsync.toml")
	require.NoError(t, os.WriteFile(path, []byte(`
[[syncs]]
name = "inline"
list = 7
source = { path = "a.csv" }
[syncs.mapping]
duplicates = "first"
[syncs.mapping.columns]
"Mail" = "email"

[[syncs]]
name = "file"
list = 7
source = { path = "a.csv" }
mapping = "crm.mapping.toml"

[[syncs]]
name = "auto"
list = 7
source = { path = "a.csv" }
`), 0o600))
	cfg, err := config.Load(path, creds)
	require.NoError(t, err)
	require.Equal(t, "first", cfg.Syncs[0].Mapping.Spec.Duplicates)
	require.Equal(t, "email", cfg.Syncs[0].Mapping.Spec.Columns["Mail"].To)
	require.Equal(t, filepath.Join(dir, "crm.mapping.toml"), cfg.Syncs[1].Mapping.File)
	require.Equal(t, "firstname", cfg.Syncs[1].Mapping.Spec.Columns["Fornavn"].To)
	require.Nil(t, cfg.Syncs[2].Mapping.Spec)
	require.True(t, cfg.Syncs[2].Mapping.IsZero())

	require.NoError(t, os.WriteFile(path, []byte(`
[[syncs]]
name = "inline"
list = 7
source = { path = "a.csv" }
mapping = { duplicates = "sometimes", colums = {} }

[[syncs]]
name = "file"
list = 7
source = { path = "a.csv" }
mapping = "bad.mapping.toml"
`), 0o600))
	_, err = config.Load(path, creds)
	require.ErrorContains(t, err, `syncs[0].mapping.colums: unknown key`)
	require.ErrorContains(t, err, `syncs[0].mapping.duplicates: want "last", "first" or "reject"`)
	require.ErrorContains(t, err, `syncs[1].mapping: "`+filepath.Join(dir, "bad.mapping.toml")+`": columns.x: `)
}

func TestErrorIsFieldError(t *testing.T) {
	t.Parallel()
	_, err := config.Parse("", []byte("[api]\nmax_attempts = 0\nbase_url = \"http://example.com\"\n"), creds)
	var fe *config.FieldError
	require.True(t, errors.As(err, &fe))
	require.Equal(t, "api.base_url", fe.Key)
	require.Equal(t, "http://example.com", fe.Value)
	require.True(t, strings.HasPrefix(err.Error(), "configuration: api.base_url"), err.Error())
}

// TestDefaultsAgreeWithSink keeps the documented defaults equal to the client's own.
func TestDefaultsAgreeWithSink(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("", nil, creds)
	require.NoError(t, err)
	sc := cfg.SinkConfig()
	require.Equal(t, sink.RequestsPerSecondDefault, sc.RequestsPerSecond)
	require.Equal(t, sink.MaxInFlightDefault, sc.MaxInFlight)
	require.Equal(t, sink.TimeoutDefault, sc.Timeout)
	require.Equal(t, sink.MaxAttemptsDefault, sc.MaxAttempts)
	require.Equal(t, sink.MaxRetryTimeDefault, sc.MaxRetryTime)
	require.Equal(t, sink.RetryAfterCapDefault, sc.RetryAfterCap)
	require.Equal(t, sink.StatusMaxPagesDefault, sc.StatusMaxPages)
	require.Equal(t, int64(sink.StatusMaxBytesDefault), sc.StatusMaxBytes)
	require.Equal(t, sink.StatusMaxTimeDefault, sc.StatusMaxTime)
	require.Equal(t, "u1", sc.UserID)
	require.Equal(t, testKey, sc.APIKey)
	require.NotContains(t, fmt.Sprintf("%v", sc), testKey)
}

func TestJobsConfig(t *testing.T) {
	t.Parallel()
	path := write(t, `
[database]
url = "postgres://subsync@db/subsync"
shared_dirs = ["/mnt/share", "exports"]
[worker]
concurrency = 8
metrics_address = "off"
shutdown_timeout = "1m"
[[syncs]]
name = "news"
schedule = "30 2 * * *"
time_zone = "Europe/Oslo"
list = 12
suppression = "update-keep-status"
source = { path = "news.csv", delimiter = ";" }
mapping = { columns = { "E-post" = "email" } }
[sources.crm]
kind = "sql"
driver = "pgx"
dsn_env = "CRM_DSN"
query = "select email from contacts"
[status]
schedule = "off"
overlap = "1h"
reconcile = true
[status.write_back]
kind = "csv"
path = "changes.csv"
`)
	cfg, err := config.Load(path, env(config.EnvUserID, "u", config.EnvAPIKey, testKey, "CRM_DSN", "postgres://crm:"+testPass+"@crm/crm"))
	require.NoError(t, err)
	jc := cfg.JobsConfig()
	require.Equal(t, "postgres://subsync@db/subsync", jc.DatabaseURL)
	require.Equal(t, []string{"/mnt/share", filepath.Join(filepath.Dir(path), "exports")}, jc.SharedDirs,
		"a relative shared directory is relative to the configuration file")
	require.Equal(t, 8, jc.Concurrency)
	require.Empty(t, jc.MetricsAddr, "off: no listener")
	require.Equal(t, time.Minute, jc.ShutdownTimeout)
	require.Empty(t, jc.StatusPull.Schedule, "off: on demand only")
	require.Equal(t, time.Hour, jc.StatusPull.Overlap)
	require.Equal(t, jobs.WriteBackSpec{Kind: jobs.WriteBackCSV, Path: filepath.Join(filepath.Dir(path), "changes.csv")},
		jc.StatusPull.WriteBack)
	require.True(t, jc.StatusPull.Reconcile)
	require.Equal(t, config.ReconcileScheduleDefault, jc.StatusPull.ReconcileSchedule)
	require.Equal(t, testKey, jc.Sink.APIKey)
	require.Len(t, jc.Syncs, 1)
	s := jc.Syncs[0]
	require.Equal(t, "news", s.Name)
	require.Equal(t, "Europe/Oslo", s.TimeZone)
	require.Equal(t, int64(12), s.ListID)
	require.Equal(t, pipeline.SuppressionUpdateKeepStatus, s.Suppression)
	require.Equal(t, filepath.Join(filepath.Dir(path), "news.csv"), s.Source.Path)
	require.Equal(t, ";", s.Source.Delimiter)
	require.Equal(t, "email", s.Mapping.Columns["E-post"].To)
	require.Equal(t, "postgres://crm:"+testPass+"@crm/crm", jc.Sources["crm"].DSN)
	require.NotContains(t, cfg.String(), testPass)
	require.NotContains(t, string(mustJSON(t, cfg)), testPass)

	_, err = config.Parse("", []byte("[sources.crm]\nkind = \"sql\"\ndriver = \"pgx\"\n"), creds)
	require.ErrorContains(t, err, "sources.crm.dsn: missing")
	require.ErrorContains(t, err, "sources.crm.query: missing")
}

// TestListIDArray (#28 point 4): api.list_id_array set says the form of the list parameter;
// unset, the client detects it.
func TestListIDArray(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		toml          string
		array, detect bool
	}{{"", false, true}, {"list_id_array = true", true, false}, {"list_id_array = false", false, false}} {
		cfg, err := config.Load(write(t, "[api]\n"+c.toml+"\n"), creds)
		require.NoError(t, err, c.toml)
		sc := cfg.SinkConfig()
		require.Equal(t, c.array, sc.ListIDArray, c.toml)
		require.Equal(t, c.detect, sc.ListIDDetect, c.toml)
	}
}
