// Package secret hides secrets (the API key, database passwords) wherever subsync would
// otherwise show them: in configurations printed or logged, in errors, in response bodies.
// Every package masks through it, with one marker, [Mask].
package secret

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// Mask replaces a secret. It is the marker of the standard library's url.URL.Redacted, so a
// masked URL or DSN stays readable (and a URL stays valid without escaping).
const Mask = "xxxxx"

// Mark returns Mask for a secret that is set and `""` for one that is not, so a reader
// tells a missing key from a hidden one.
func Mark(s string) string {
	if s == "" {
		return `""`
	}
	return Mask
}

// Masker replaces a fixed set of secrets in text.
type Masker struct{ r *strings.Replacer }

// NewMasker masks each of secrets (empty ones are ignored).
func NewMasker(secrets ...string) *Masker {
	var pairs []string
	for _, s := range secrets {
		if s != "" {
			pairs = append(pairs, s, Mask)
		}
	}
	return &Masker{r: strings.NewReplacer(pairs...)}
}

// BasicAuth masks the credentials of HTTP Basic authentication, in every form a service may
// echo them: the token of the Authorization header and the key, each as it is, in base64
// (standard or URL-safe, with or without '=' padding), and URL-encoded (as a query value or
// a path, with upper- or lower-case escapes).
func BasicAuth(token, key string) *Masker {
	var forms []string
	for _, s := range []string{token, key} {
		if s == "" {
			continue
		}
		forms = append(forms, encodings(s)...)
	}
	if raw, err := base64.StdEncoding.DecodeString(token); err == nil {
		forms = append(forms, encodings(string(raw))...) // "user:key", decoded
	}
	// The longest first: a form that holds another is replaced whole.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return NewMasker(slices.Compact(forms)...)
}

// encodings are the forms of a secret s that a service may show: s itself, URL-encoded, and
// in base64.
func encodings(s string) []string {
	out := []string{s, url.QueryEscape(s), url.PathEscape(s), lowerEscapes(url.QueryEscape(s)), lowerEscapes(url.PathEscape(s))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		b := enc.EncodeToString([]byte(s))
		out = append(out, b, strings.TrimRight(b, "="))
	}
	return out
}

// lowerEscapes writes the %XX escapes of s in lower case.
func lowerEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// String returns s with every secret replaced by Mask.
func (m *Masker) String(s string) string { return m.r.Replace(s) }

var kvPasswordRE = regexp.MustCompile(`(?i)(password\s*=\s*)('[^']*'|\S+)`)

// DSN hides the password of a connection string: a URL (postgres://user:pass@host/db, and a
// password= query parameter), key=value pairs (host=… password=…), a MySQL DSN
// (user:pass@tcp(host)/db), and whatever else the driver (pgx, postgres, postgresql, mysql;
// may be "") reads as the password. A URL that cannot be read is masked entirely.
func DSN(driver, dsn string) string {
	if dsn == "" {
		return ""
	}
	if out := dsnShape(dsn); out != dsn {
		return out
	}
	// A form only the driver reads: hide the password wherever it appears.
	if pw := dsnPassword(driver, dsn); pw != "" {
		return strings.ReplaceAll(dsn, pw, Mask)
	}
	return dsn
}

// dsnShape masks the password where the DSN's shape shows it.
func dsnShape(dsn string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return Mask
		}
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
		}
		q := u.Query()
		changed := false
		for k := range q {
			if strings.EqualFold(k, "password") {
				q.Set(k, Mask)
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	if kvPasswordRE.MatchString(dsn) {
		return kvPasswordRE.ReplaceAllString(dsn, "${1}"+Mask)
	}
	// MySQL: [user[:password]@][net[(addr)]]/dbname[?params]; the last '@' before the last
	// '/' ends the credentials.
	slash := strings.LastIndex(dsn, "/")
	if slash < 0 {
		slash = len(dsn)
	}
	if at := strings.LastIndex(dsn[:slash], "@"); at >= 0 {
		if user, _, ok := strings.Cut(dsn[:at], ":"); ok {
			return user + ":" + Mask + dsn[at:]
		}
	}
	return dsn
}

// dsnPassword returns the password a DSN holds, or "": for Postgres as pgx reads it (a URL
// or key=value pairs), for MySQL as its driver reads it, for anything else from a URL's
// user info or a password=... pair.
func dsnPassword(driver, dsn string) string {
	switch driver {
	case "pgx", "postgres", "postgresql":
		if cfg, err := pgx.ParseConfig(dsn); err == nil && cfg.Password != "" {
			return cfg.Password
		}
	case "mysql":
		if cfg, err := mysql.ParseDSN(dsn); err == nil && cfg.Passwd != "" {
			return cfg.Passwd
		}
	}
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			return pw
		}
	}
	if m := kvPasswordRE.FindStringSubmatch(dsn); m != nil && m[2] != "" {
		return strings.Trim(m[2], `'`)
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

// ScrubDSN is [Scrub] for an error of a database driver: it hides the DSN and its password.
func ScrubDSN(err error, driver, dsn string) error {
	if err == nil || dsn == "" {
		return err
	}
	secrets := []string{dsn}
	if pw := dsnPassword(driver, dsn); pw != "" {
		secrets = append(secrets, pw)
	}
	return scrub(err, secrets, func(msg string) string {
		return strings.ReplaceAll(msg, dsn, DSN(driver, dsn))
	})
}

// Scrub returns err, or, when err or any error it wraps shows one of the secrets (in its
// message or its fields, as a pgx parse error keeps the connection string), a new error
// with the message masked. The new error does not wrap err, so the secret cannot be reached
// through errors.Unwrap either; it wraps only a context error, so errors.Is still tells a
// cancellation.
func Scrub(err error, secrets ...string) error { return scrub(err, secrets, nil) }

func scrub(err error, secrets []string, first func(string) string) error {
	if err == nil {
		return nil
	}
	var set []string
	for _, s := range secrets {
		if s != "" {
			set = append(set, s)
		}
	}
	if !leaks(err, set) {
		return err
	}
	msg := err.Error()
	if first != nil {
		msg = first(msg)
	}
	for _, s := range set {
		msg = strings.ReplaceAll(msg, s, Mask)
	}
	r := &maskedError{msg: msg}
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

// maskedError is an error whose message had a secret removed.
type maskedError struct {
	msg   string
	cause error // a context error, or nil
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.cause }

// Personal replaces personal data (an e-mail's local part, a name, a phone number) shown
// where the reader may not see it. It is not a secret's marker, so a masked person cannot be
// read as a masked credential.
const Personal = "***"

// Email hides a person's address from a reader who may not see it: its first letter and its
// domain stay ("k***@example.com"), so an operator can still tell addresses apart.
func Email(e string) string {
	local, domain, ok := strings.Cut(e, "@")
	if !ok || local == "" {
		return Personal
	}
	r := []rune(local)
	return string(r[0]) + Personal + "@" + domain
}

// Phone hides a phone number from a reader who may not see it, as Email hides an address:
// its first character and its last two stay ("+***67").
func Phone(p string) string {
	r := []rune(strings.TrimSpace(p))
	if len(r) < 5 {
		return Personal
	}
	return string(r[0]) + Personal + string(r[len(r)-2:])
}

// LooksLikePhone reports whether a value may be a phone number (or another long number of
// a person's, such as a date of birth): five digits or more.
func LooksLikePhone(v string) bool {
	n := 0
	for _, c := range v {
		if c >= '0' && c <= '9' {
			n++
		}
	}
	return n >= 5
}
