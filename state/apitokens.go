package state

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The HTTP API's tokens: `subsync tokens create NAME` makes a random token, shows it once and
// keeps only its SHA-256 (a token is 256 random bits, so a plain hash is as good as a slow
// one and lets a request be checked with one indexed read). A request's token is found by
// its hash (APIToken); a revoked token stays listed, with when it was revoked, and finds
// nothing.

// TokenPrefix starts every API token, so that a token is recognisable in a file or a
// secret scanner.
const TokenPrefix = "subsync_"

// Errors of the API tokens.
var (
	// ErrTokenExists: a token with that name is in use (revoke it first).
	ErrTokenExists = errors.New("a token with that name exists")
	// ErrBadTokenName: a token's name must be a short word.
	ErrBadTokenName = errors.New("a token's name is 1 to 64 letters, digits, '.', '_' or '-'")
)

var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// APIToken is a token as the database keeps it: never its value.
type APIToken struct {
	Name      string
	ReadOnly  bool
	CreatedAt time.Time
	LastUsed  time.Time // zero: never used
	RevokedAt time.Time // zero: in use
}

// TokenHash is what the database keeps of a token: its SHA-256, hex.
func TokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// CreateAPIToken makes a token named name and returns its value, which is nowhere else: the
// database keeps its hash. A revoked token's name may be used again; an active one's not
// (ErrTokenExists).
func (s *Store) CreateAPIToken(ctx context.Context, name string, readOnly bool) (string, error) {
	if !tokenNameRE.MatchString(name) {
		return "", fmt.Errorf("token name %q: %w", name, ErrBadTokenName)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	ro := 0
	if readOnly {
		ro = 1
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var revoked int64
		err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM subsync_api_token WHERE name = $1`, name).Scan(&revoked)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case revoked == 0:
			return fmt.Errorf("token %q: %w (subsync tokens revoke %s first, or choose another name)", name, ErrTokenExists, name)
		default:
			if _, err := tx.ExecContext(ctx, `DELETE FROM subsync_api_token WHERE name = $1`, name); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO subsync_api_token (name, token_hash, read_only, created_at)
VALUES ($1, $2, $3, `+s.d.nowExpr()+`)`, name, TokenHash(token), ro)
		return err
	})
	if errors.Is(err, ErrTokenExists) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("create token %q: %w", name, err)
	}
	return token, nil
}

// APITokens lists the tokens, by name, the revoked ones too.
func (s *Store) APITokens(ctx context.Context) ([]APIToken, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, read_only, created_at, last_used_at, revoked_at
FROM subsync_api_token ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	var out []APIToken
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
}

func scanToken(row interface{ Scan(...any) error }) (APIToken, error) {
	var t APIToken
	var ro, created, used, revoked int64
	if err := row.Scan(&t.Name, &ro, &created, &used, &revoked); err != nil {
		return t, err
	}
	t.ReadOnly, t.CreatedAt, t.LastUsed, t.RevokedAt = ro != 0, fromMicros(created), fromMicros(used), fromMicros(revoked)
	return t, nil
}

// RevokeAPIToken revokes the token named name: from now on it finds nothing. ErrNotFound when
// no token in use has that name.
func (s *Store) RevokeAPIToken(ctx context.Context, name string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_api_token SET revoked_at = `+s.d.nowExpr()+`
WHERE name = $1 AND revoked_at = 0`, name)
	if err != nil {
		return fmt.Errorf("revoke token %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("token %q: no such token in use: %w", name, ErrNotFound)
	}
	return nil
}

// tokenUseRecorded is how often a token's last use is written: a database write per call
// would compete with the runs' checkpoints (SQLite has one writer).
const tokenUseRecorded = time.Minute

// UseAPIToken finds the token a request carries, in use (not revoked), and records that it
// was used (at most once a minute); ErrNotFound for any other value.
func (s *Store) UseAPIToken(ctx context.Context, token string) (APIToken, error) {
	if !strings.HasPrefix(token, TokenPrefix) {
		return APIToken{}, ErrNotFound
	}
	hash := TokenHash(token)
	t, err := scanToken(s.db.QueryRowContext(ctx, `SELECT name, read_only, created_at, last_used_at, revoked_at
FROM subsync_api_token WHERE token_hash = $1 AND revoked_at = 0`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return APIToken{}, ErrNotFound
	}
	if err != nil {
		return APIToken{}, fmt.Errorf("check a token: %w", err)
	}
	if !t.LastUsed.IsZero() && time.Since(t.LastUsed) < tokenUseRecorded {
		return t, nil // recorded a moment ago: a client polling a job writes nothing
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE subsync_api_token SET last_used_at = `+s.d.nowExpr()+`
WHERE token_hash = $1`, hash); err != nil {
		return APIToken{}, fmt.Errorf("record the use of token %q: %w", t.Name, err)
	}
	return t, nil
}
