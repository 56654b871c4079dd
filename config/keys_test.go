package config

import "testing"

func TestTOMLKey(t *testing.T) {
	t.Parallel()
	for field, want := range map[string]string{
		"Sink.BaseURL":                    "api.base_url",
		"Sink.APIKey":                     "api.api_key",
		"Sink.UserID":                     "api.user_id",
		"Sink.RetryAfterCap":              "api.retry_after_cap",
		"DatabaseURL":                     "database.url",
		"MetricsAddr":                     "worker.metrics_address",
		"Syncs[1].Schedule":               "syncs[1].schedule",
		"Syncs[0].ListID":                 "syncs[0].list",
		"Syncs[2].Source.DSN":             "syncs[2].source.dsn",
		"Syncs[2].Source.WatermarkColumn": "syncs[2].source.watermark_column",
		"Sources[crm.eu].HeaderRow":       "sources.crm.eu.header_row",
		"StatusPull.WriteBack.Statement":  "status.write_back.statement",
		"StatusPull.TimeZone":             "status.time_zone",
	} {
		if got := tomlKey(field); got != want {
			t.Errorf("tomlKey(%q) = %q, want %q", field, got, want)
		}
	}
}
