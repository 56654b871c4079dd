package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/BurntSushi/toml"
	"github.com/subsync/subsync/internal/secret"
)

// redacted returns a copy of c that is safe to print: the API key and every password of a
// database URL or DSN are replaced.
func (c Config) redacted() Config {
	if c.API.APIKey != "" {
		c.API.APIKey = secret.Mask
	}
	c.Database.URL = secret.DSN("", c.Database.URL)
	c.Syncs = append([]Sync(nil), c.Syncs...)
	for i := range c.Syncs {
		c.Syncs[i].Source.DSN = secret.DSN("", c.Syncs[i].Source.DSN)
	}
	if c.Sources != nil {
		srcs := make(map[string]Source, len(c.Sources))
		for name, src := range c.Sources {
			src.DSN = secret.DSN("", src.DSN)
			srcs[name] = src
		}
		c.Sources = srcs
	}
	c.Status.WriteBack.DSN = secret.DSN("", c.Status.WriteBack.DSN)
	if c.Notify.WebhookURL != "" {
		c.Notify.WebhookURL = secret.Mask
	}
	return c
}

// String returns the effective configuration as TOML, with every secret redacted.
func (c Config) String() string {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(c.redacted()); err != nil {
		return "config: " + err.Error()
	}
	return buf.String()
}

// LogValue describes the configuration in logs without any secret.
func (c Config) LogValue() slog.Value {
	r := c.redacted()
	names := make([]string, len(r.Syncs))
	for i, s := range r.Syncs {
		names[i] = s.Name
	}
	db := r.Database.URL
	if db == "" {
		db = "sqlite:" + r.Database.DataDir
	}
	return slog.GroupValue(
		slog.String("path", r.Path),
		slog.String("base_url", r.API.BaseURL),
		slog.String("legacy_base_url", r.API.LegacyBaseURL),
		slog.String("user_id", r.API.UserID),
		slog.String("api_key", r.API.APIKey),
		slog.String("database", db),
		slog.Any("syncs", names),
	)
}

// GoString keeps %#v from printing the unredacted struct (%v and %+v use String).
func (c Config) GoString() string { return c.String() }

// String describes the API section with the key redacted.
func (a API) String() string {
	c := Config{API: a}
	return c.redacted().API.describe()
}

// GoString keeps %#v from printing the API key.
func (a API) GoString() string { return a.String() }

// LogValue describes the API section in logs without the key.
func (a API) LogValue() slog.Value { return slog.StringValue(a.String()) }

func (a API) describe() string {
	return fmt.Sprintf("{base_url:%s legacy_base_url:%s user_id:%s api_key:%s}", a.BaseURL, a.LegacyBaseURL, a.UserID, a.APIKey)
}

// MarshalJSON encodes the effective configuration with every secret redacted.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	return json.Marshal(plain(c.redacted()))
}

// MarshalJSON encodes the API section with the key redacted.
func (a API) MarshalJSON() ([]byte, error) {
	type plain API
	return json.Marshal(plain(Config{API: a}.redacted().API))
}

// LogValue logs the database section with the password of the URL redacted.
func (d Database) LogValue() slog.Value {
	return slog.GroupValue(slog.String("url", secret.DSN("", d.URL)), slog.String("data_dir", d.DataDir))
}

// MarshalJSON encodes the database section with the password of the URL redacted.
func (d Database) MarshalJSON() ([]byte, error) {
	type plain Database
	d.URL = secret.DSN("", d.URL)
	return json.Marshal(plain(d))
}

// LogValue logs the source with the password of its DSN redacted.
func (s Source) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON encodes the source with the password of its DSN redacted.
func (s Source) MarshalJSON() ([]byte, error) {
	type plain Source
	s.DSN = secret.DSN("", s.DSN)
	return json.Marshal(plain(s))
}

// LogValue logs the write-back with the password of its DSN redacted.
func (w WriteBack) LogValue() slog.Value { return slog.StringValue(w.String()) }

// MarshalJSON encodes the write-back with the password of its DSN redacted.
func (w WriteBack) MarshalJSON() ([]byte, error) {
	type plain WriteBack
	w.DSN = secret.DSN("", w.DSN)
	return json.Marshal(plain(w))
}

// String describes the database section with the password of the URL redacted.
func (d Database) String() string {
	type plain Database
	d.URL = secret.DSN("", d.URL)
	return fmt.Sprintf("%+v", plain(d))
}

// GoString keeps %#v from printing the password.
func (d Database) GoString() string { return d.String() }

// String describes the source with the password of its DSN redacted.
func (s Source) String() string {
	type plain Source
	s.DSN = secret.DSN("", s.DSN)
	return fmt.Sprintf("%+v", plain(s))
}

// GoString keeps %#v from printing the password.
func (s Source) GoString() string { return s.String() }

// String describes the write-back with the password of its DSN redacted.
func (w WriteBack) String() string {
	type plain WriteBack
	w.DSN = secret.DSN("", w.DSN)
	return fmt.Sprintf("%+v", plain(w))
}

// GoString keeps %#v from printing the password.
func (w WriteBack) GoString() string { return w.String() }
