package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConfigCheckRejectsWhatRunRejects feeds `config check` and `run` the same invalid
// configurations: both refuse every one, so a configuration the check passes is one the
// worker starts with (the check and the worker's start run the same validation).
func TestConfigCheckRejectsWhatRunRejects(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	api := func(extra string) string {
		return fmt.Sprintf("[api]\nbase_url = %q\nuser_id = %q\nmax_attempts = 1\n%s[worker]\nmetrics_address = \"off\"\n", h.srv.URL, h.srv.User, extra)
	}
	sync := "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { path = \"a.csv\" }\n"
	cases := []struct{ name, toml, want string }{
		{"base url with a query", "[api]\nbase_url = \"" + h.srv.URL + "?x=1\"\nuser_id = \"u\"\n", "api.base_url"},
		{"base url with a fragment", "[api]\nbase_url = \"" + h.srv.URL + "#top\"\nuser_id = \"u\"\n", "api.base_url"},
		{"plain http", "[api]\nbase_url = \"http://example.com/v2\"\nuser_id = \"u\"\n", "api.base_url"},
		{"negative timeout", api("timeout = \"-1s\"\n"), "api.timeout"},
		{"concurrency", api("") + "concurrency = -1\n", "worker.concurrency"},
		{"metrics address", strings.Replace(api(""), `metrics_address = "off"`, `metrics_address = "9464"`, 1), "worker.metrics_address"},
		{"database url", api("") + "[database]\nurl = \"mysql://root@db/x\"\n", "database.url"},
		{"schedule", api("") + sync + "schedule = \"0 25 * * *\"\n", "syncs[0].schedule"},
		{"time zone", api("") + sync + "time_zone = \"Mars/Olympus\"\n", "syncs[0].time_zone"},
		{"duplicate sync", api("") + sync + sync, "syncs[1].name"},
		{"list", api("") + "[[syncs]]\nname = \"a\"\nsource = { path = \"a.csv\" }\n", "syncs[0].list"},
		{"source driver", api("") + "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { kind = \"sql\", driver = \"oracle\", dsn = \"x\", query = \"select 1\" }\n", "syncs[0].source.driver"},
		{"delimiter", api("") + "[[syncs]]\nname = \"a\"\nlist = 1\nsource = { path = \"a.csv\", delimiter = \";;\" }\n", "syncs[0].source.delimiter"},
		{"named source", api("") + "[sources.crm]\nkind = \"sql\"\ndriver = \"pgx\"\ndsn = \"postgres://db/crm\"\n", "sources.crm.query"},
		{"status schedule", api("") + "[status]\nschedule = \"* * * 13 *\"\n", "status.schedule"},
		{"write-back", api("") + "[status.write_back]\nkind = \"sql\"\ndriver = \"sqlite\"\ndsn = \"crm.db\"\nstatement = \"update c set s = ?\"\n", "status.write_back.statement"},
		{"no api key", api(""), "api.api_key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := setup(t, "")
			if tc.name == "no api key" {
				h.env = nil
			}
			h.write(tc.toml)
			check := h.run("", "config", "check")
			require.Equal(t, ExitUsage, check.code, "config check: got exit %d, want %d\n%s", check.code, ExitUsage, check.stdout)
			require.Contains(t, check.stderr, tc.want)

			// run must refuse at start; the deadline only keeps a run that wrongly started
			// from hanging the test.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out, errb bytes.Buffer
			a := newApp(strings.NewReader(""), &out, &errb)
			a.getenv = func(k string) string { return h.env[k] }
			code := a.main(ctx, []string{"--config", h.config, "run"})
			require.NoError(t, ctx.Err(), "run started with a configuration it should refuse")
			require.NotEqual(t, 0, code, "run: got exit 0, want a refusal\n%s", errb.String())
			require.Contains(t, errb.String(), tc.want)
			require.NotContains(t, errb.String(), testKey)
		})
	}
}
