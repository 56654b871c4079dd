package sources

import (
	"errors"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// redacted replaces a password wherever subsync would otherwise show it.
const redacted = "xxxxx"

// dsnPassword returns the password a DSN holds, or "": for Postgres as pgx reads it (a URL
// or key=value pairs), for MySQL as its driver reads it, for anything else from a URL's
// user info or a password=... pair.
func dsnPassword(driver, dsn string) string {
	switch {
	case isPostgres(driver):
		if cfg, err := pgx.ParseConfig(dsn); err == nil && cfg.Password != "" {
			return cfg.Password
		}
	case driver == "mysql":
		if cfg, err := mysql.ParseDSN(dsn); err == nil && cfg.Passwd != "" {
			return cfg.Passwd
		}
	}
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			return pw
		}
	}
	for _, f := range strings.Fields(dsn) {
		if k, v, ok := strings.Cut(f, "="); ok && strings.EqualFold(k, "password") && v != "" {
			return strings.Trim(v, `'`)
		}
	}
	// user:password@host forms no parser above understood (a DSN with a typo).
	if at := strings.LastIndex(dsn, "@"); at > 0 {
		userinfo := dsn[:at]
		if i := strings.Index(userinfo, "://"); i >= 0 {
			userinfo = userinfo[i+3:]
		}
		if _, pw, ok := strings.Cut(userinfo, ":"); ok && pw != "" {
			return pw
		}
	}
	return ""
}

// RedactDSN returns dsn with its password replaced, for logs and messages.
func RedactDSN(driver, dsn string) string {
	if pw := dsnPassword(driver, dsn); pw != "" {
		return strings.ReplaceAll(dsn, pw, redacted)
	}
	return dsn
}

// scrub returns err, or, when its message shows the DSN's password (or the whole DSN), a
// new error with the same message redacted. The new error does not wrap err, so the
// password cannot be reached through errors.Unwrap either.
func scrub(err error, driver, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	pw := dsnPassword(driver, dsn)
	leaks := (pw != "" && strings.Contains(msg, pw)) || (dsn != "" && strings.Contains(msg, dsn))
	if !leaks {
		return err
	}
	if dsn != "" {
		msg = strings.ReplaceAll(msg, dsn, RedactDSN(driver, dsn))
	}
	if pw != "" {
		msg = strings.ReplaceAll(msg, pw, redacted)
	}
	return errors.New(msg)
}
