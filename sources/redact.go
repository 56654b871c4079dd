package sources

import (
	"context"
	"errors"
	"fmt"
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

// scrub returns err, or, when err or any error it wraps shows the DSN's password or the
// whole DSN (in its message or its fields, as a pgx parse error keeps the connection
// string), a new error with the message redacted. The new error does not wrap err, so
// the password cannot be reached through errors.Unwrap either; it wraps only a context
// error, so errors.Is still tells a cancellation.
func scrub(err error, driver, dsn string) error {
	if err == nil {
		return nil
	}
	var secrets []string
	if pw := dsnPassword(driver, dsn); pw != "" {
		secrets = append(secrets, pw)
	}
	if dsn != "" {
		secrets = append(secrets, dsn)
	}
	if !leaks(err, secrets) {
		return err
	}
	msg := err.Error()
	if dsn != "" {
		msg = strings.ReplaceAll(msg, dsn, RedactDSN(driver, dsn))
	}
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, redacted)
	}
	r := &redactedError{msg: msg}
	for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, ctxErr) {
			r.cause = ctxErr
		}
	}
	return r
}

// leaks reports whether err or an error it wraps shows one of the secrets.
func leaks(err error, secrets []string) bool {
	if err == nil || len(secrets) == 0 {
		return false
	}
	shown := err.Error() + fmt.Sprintf(" %+v %#v", err, err)
	for _, s := range secrets {
		if strings.Contains(shown, s) {
			return true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return leaks(u.Unwrap(), secrets)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if leaks(e, secrets) {
				return true
			}
		}
	}
	return false
}

// redactedError is an error whose message had a secret removed.
type redactedError struct {
	msg   string
	cause error // a context error, or nil
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }
