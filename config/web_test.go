package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/config"
)

// The pages' password and the webhook URL come from the environment or a file, and the
// webhook URL is masked like the API key wherever the configuration is printed.
func TestWebAndNotifySecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const hook = "https://hooks.slack.com/services/T0/B0/very-secret-token"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook"), []byte(hook+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pw"), []byte("pages-pass\n"), 0o600))
	data := []byte("[web]\npassword_file = \"pw\"\n[notify]\nwebhook_url_file = \"hook\"\n")
	cfg, err := config.Parse(filepath.Join(dir, "subsync.toml"), data, env())
	require.NoError(t, err)
	require.Equal(t, "pages-pass", cfg.Web.Password)
	require.Equal(t, hook, cfg.Notify.WebhookURL)
	require.Equal(t, hook, cfg.JobsConfig().Notify.WebhookURL)
	for _, s := range []string{cfg.String(), fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg)} {
		require.NotContains(t, s, "very-secret-token")
		require.NotContains(t, s, "pages-pass")
	}

	cfg, err = config.Parse(filepath.Join(dir, "subsync.toml"), data,
		env(config.EnvWebPassword, "from-env", config.EnvNotifyWebhookURL, "https://example.com/h"))
	require.NoError(t, err)
	require.Equal(t, "from-env", cfg.Web.Password)
	require.Equal(t, "https://example.com/h", cfg.Notify.WebhookURL)

	_, err = config.Parse("", []byte("[notify]\nwebhook_url = \"ftp://x/very-secret-token\"\n"), env())
	require.ErrorContains(t, err, "notify.webhook_url")
	require.NotContains(t, err.Error(), "very-secret-token")
}

// web.time_zone is an IANA zone or empty (the machine's); another value is refused naming
// the key.
func TestWebTimeZone(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("", []byte("[web]\ntime_zone = \"Europe/Oslo\"\n"), env())
	require.NoError(t, err)
	require.Equal(t, "Europe/Oslo", cfg.Web.TimeZone)
	_, err = config.Parse("", []byte("[web]\ntime_zone = \"Europe/Bergen\"\n"), env())
	require.ErrorContains(t, err, "web.time_zone")
	require.ErrorContains(t, err, "Europe/Bergen")
}

// web.max_upload_size is a size with a unit, 1 GiB by default; a bare number or another word
// is refused naming the key.
func TestWebMaxUploadSize(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("", []byte(""), env())
	require.NoError(t, err)
	require.Equal(t, config.Size(1<<30), cfg.Web.MaxUploadSize)
	for text, want := range map[string]int64{"2MiB": 2 << 20, "100MB": 100e6, "1.5GiB": 3 << 29, "4096B": 4096} {
		cfg, err = config.Parse("", []byte("[web]\nmax_upload_size = \""+text+"\"\n"), env())
		require.NoError(t, err, text)
		require.Equal(t, config.Size(want), cfg.Web.MaxUploadSize, text)
	}
	for _, bad := range []string{`"12"`, `"lots"`, `"-1MiB"`, `12`} {
		_, err = config.Parse("", []byte("[web]\nmax_upload_size = "+bad+"\n"), env())
		require.ErrorContains(t, err, "max_upload_size", bad)
	}
}
