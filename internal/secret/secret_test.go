package secret_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/secret"
)

func TestDSN(t *testing.T) {
	t.Parallel()
	tests := []struct{ driver, in, want string }{
		{"", "postgres://u:p@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"", "postgres://u@h/db", "postgres://u@h/db"},
		{"", "postgres://h/db?password=p&sslmode=disable", "postgres://h/db?password=xxxxx&sslmode=disable"},
		{"", "host=h password='p q' user=u", "host=h password=xxxxx user=u"},
		{"", "u:p@w@tcp(h:3306)/db?parseTime=true", "u:xxxxx@tcp(h:3306)/db?parseTime=true"},
		{"", "u@tcp(h)/db", "u@tcp(h)/db"},
		{"", "file:crm.db?mode=ro", "file:crm.db?mode=ro"},
		{"", "", ""},
		{"mysql", "u:p@ss@tcp(db:3306)/crm", "u:xxxxx@tcp(db:3306)/crm"},
		{"pgx", "host=db password=hunter2", "host=db password=xxxxx"},
		{"pgx", "postgres://u:pw@db/crm", "postgres://u:xxxxx@db/crm"},
		{"sqlite", "/var/lib/crm.db", "/var/lib/crm.db"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, secret.DSN(tt.driver, tt.in), tt.in)
	}
}

func TestScrubDSN(t *testing.T) {
	t.Parallel()
	const pw = "S3cret-pass"
	for _, tt := range []struct{ driver, dsn string }{
		{"pgx", "postgres://crm:" + pw + "@db:5432/crm"},
		{"pgx", "host=db user=crm password=" + pw + " dbname=crm"},
		{"mysql", "crm:" + pw + "@tcp(db:3306)/crm"},
	} {
		err := secret.ScrubDSN(fmt.Errorf("connect: %w", errors.New("cannot connect with "+tt.dsn+" (password "+pw+")")), tt.driver, tt.dsn)
		require.NotContains(t, err.Error(), pw)
		require.NotContains(t, fmt.Sprintf("%+v %#v", err, errors.Unwrap(err)), pw)
		require.Contains(t, err.Error(), "cannot connect")
		require.Contains(t, err.Error(), secret.Mask)
	}
	plain := errors.New("connection refused")
	require.Same(t, plain, secret.ScrubDSN(plain, "pgx", "postgres://crm:"+pw+"@db/crm"))
}

// TestBasicAuthWithoutPadding: a service that echoes the Authorization header may drop the
// token's '=' padding; the token is masked either way.
func TestBasicAuthWithoutPadding(t *testing.T) {
	t.Parallel()
	const key = "s3cr3t-API-key-Zq9"
	token := base64.StdEncoding.EncodeToString([]byte("user-1:" + key))
	require.True(t, strings.HasSuffix(token, "="), "the test needs a padded token")
	unpadded := strings.TrimRight(token, "=")
	m := secret.BasicAuth(token, key)
	for _, in := range []string{"Basic " + token, "token " + unpadded + " rejected", "key " + key} {
		out := m.String(in)
		require.NotContains(t, out, unpadded, in)
		require.NotContains(t, out, key, in)
		require.Contains(t, out, secret.Mask, in)
	}
	require.Equal(t, `""`, secret.Mark(""))
	require.Equal(t, secret.Mask, secret.Mark(key))
}

// TestBasicAuthEveryEncoding: a service may echo the credentials in another encoding than it
// got them; the key and the token are masked URL-encoded (query or path, upper- or lower-case
// escapes) and in base64 (standard or URL-safe, padded or not), and "user:key" decoded.
func TestBasicAuthEveryEncoding(t *testing.T) {
	t.Parallel()
	const key = "k3y/with+special=chars&more?~"
	token := base64.StdEncoding.EncodeToString([]byte("user-1:" + key))
	m := secret.BasicAuth(token, key)
	forms := map[string]string{
		"query-escaped key":  url.QueryEscape(key),
		"path-escaped key":   url.PathEscape(key),
		"lower-case escapes": strings.ToLower(url.QueryEscape(key)),
		"base64 key":         base64.StdEncoding.EncodeToString([]byte(key)),
		"base64url key":      base64.RawURLEncoding.EncodeToString([]byte(key)),
		"base64url token":    base64.URLEncoding.EncodeToString([]byte("user-1:" + key)),
		"unpadded url token": base64.RawURLEncoding.EncodeToString([]byte("user-1:" + key)),
		"decoded token":      "user-1:" + key,
		"token in a query":   url.QueryEscape("Basic " + token),
	}
	for name, form := range forms {
		out := m.String(`{"message":"you sent ` + form + `"}`)
		require.NotContains(t, out, form, name)
		require.NotContains(t, out, "k3y", name)
		require.Contains(t, out, secret.Mask, name)
	}
}

// TestOneMarker keeps masking in this package: no other file of the module writes a marker
// of its own.
func TestOneMarker(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.HasPrefix(path, filepath.Join(root, "internal", "secret")) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, marker := range []string{`"[REDACTED]"`, `"xxxxx"`, `"***"`, ".Redacted()"} {
			if bytes.Contains(b, []byte(marker)) {
				t.Errorf("%s writes the marker %s: use secret.Mask", path, marker)
			}
		}
		return nil
	})
	require.NoError(t, err)
}
