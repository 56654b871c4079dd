package config

import (
	"net/url"
	"time"

	"github.com/subsync/subsync/internal/secret"
	"github.com/subsync/subsync/web"
)

// Environment variables of the pages' password and the notification webhook (they win over
// the files).
const (
	EnvWebPassword      = "SUBSYNC_WEB_PASSWORD"
	EnvNotifyWebhookURL = "SUBSYNC_NOTIFY_WEBHOOK_URL"
)

// MissedScheduleGraceDefault is how late a scheduled run may start before it counts as missed.
const MissedScheduleGraceDefault = 15 * time.Minute

// Web configures the pages served on worker.metrics_address (and by `subsync ui`).
type Web struct {
	// PasswordFile names a file holding the pages' password (surrounding white space is
	// trimmed). SUBSYNC_WEB_PASSWORD wins. Required when the listener is not on loopback.
	// The password is resolved into Password; it is never read from the file's TOML.
	PasswordFile string `toml:"password_file"`
	// Password is the resolved password (from the environment or PasswordFile).
	Password string `toml:"-"`
	// TimeZone is the IANA zone the pages show times in ("Europe/Oslo"); empty = the
	// machine's zone.
	TimeZone string `toml:"time_zone"`
	// MaxUploadSize bounds a file uploaded on the import page or through the API
	// (POST /api/v1/imports); a larger one is refused (413) with nothing kept. Default
	// web.MaxUploadSizeDefault (1 GiB).
	MaxUploadSize Size `toml:"max_upload_size"`
}

// Notify configures the failure notifications.
type Notify struct {
	// WebhookURL is an incoming webhook (Slack, Microsoft Teams, or anything taking a JSON
	// {"text": …} body). It is a secret: prefer WebhookURLFile or SUBSYNC_NOTIFY_WEBHOOK_URL
	// (which wins). Empty = no notifications.
	WebhookURL string `toml:"webhook_url"`
	// WebhookURLFile names a file holding the webhook URL.
	WebhookURLFile string `toml:"webhook_url_file"`
	// MissedScheduleGrace is how late a scheduled sync may start before it is reported as
	// missed. Default MissedScheduleGraceDefault.
	MissedScheduleGrace Duration `toml:"missed_schedule_grace"`
}

// resolveWeb reads the pages' password and the webhook URL from the environment or their
// files, and checks the URL.
func (c *Config) resolveWeb(probs *problems, getenv func(string) string, rel func(string) string) {
	c.Web.PasswordFile = rel(c.Web.PasswordFile)
	switch v := getenv(EnvWebPassword); {
	case v != "":
		c.Web.Password = v
	case c.Web.PasswordFile != "":
		p, err := readSecret(c.Web.PasswordFile)
		if err != nil {
			probs.add("web.password_file", c.Web.PasswordFile, "%v", err)
		}
		c.Web.Password = p
	}
	if _, err := web.LoadTimeZone(c.Web.TimeZone); err != nil {
		probs.add("web.time_zone", c.Web.TimeZone, "want an IANA zone such as Europe/Oslo, or empty for the machine's zone")
	}
	n := &c.Notify
	if n.WebhookURL != "" && n.WebhookURLFile != "" {
		probs.add("notify.webhook_url", "", "set notify.webhook_url or notify.webhook_url_file, not both")
	}
	n.WebhookURLFile = rel(n.WebhookURLFile)
	switch v := getenv(EnvNotifyWebhookURL); {
	case v != "":
		n.WebhookURL = v
	case n.WebhookURL == "" && n.WebhookURLFile != "":
		u, err := readSecret(n.WebhookURLFile)
		if err != nil {
			probs.add("notify.webhook_url_file", n.WebhookURLFile, "%v", err)
		}
		n.WebhookURL = u
	}
	if n.WebhookURL != "" {
		u, err := url.Parse(n.WebhookURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			// The value is a secret: the message does not repeat it.
			probs.add("notify.webhook_url", secret.Mask, "must be an http(s) URL")
		}
	}
	if n.MissedScheduleGrace == 0 {
		n.MissedScheduleGrace = Duration(MissedScheduleGraceDefault)
	}
}
