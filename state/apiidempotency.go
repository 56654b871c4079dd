package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The HTTP API's Idempotency-Key: a POST carrying a key is begun once per token and key
// (BeginIdempotent); its answer is kept (FinishIdempotent) and given again to the same key
// for IdempotencyTTL, so a client that retries after a lost answer queues nothing new. An
// answer kept here names a job, never a person: the API keeps no answer that holds an e-mail
// address (a dry run is answered anew).

// IdempotencyTTL is how long the first answer to a key is given again.
const IdempotencyTTL = 24 * time.Hour

// idempotencyStale is how long a request begun and never finished (its process died) holds
// its key.
const idempotencyStale = time.Hour

// ErrIdempotencyInProgress: the first request with the key is still under way.
var ErrIdempotencyInProgress = errors.New("a request with this Idempotency-Key is under way")

// ErrIdempotencyMismatch: the key was used for another request (another method or path).
var ErrIdempotencyMismatch = errors.New("this Idempotency-Key was used for another request")

// IdempotentAnswer is the first answer to a key.
type IdempotentAnswer struct {
	Status      int
	Location    string
	ContentType string
	Body        []byte
}

// BeginIdempotent claims key for token's request (its method and path): (nil, nil) when this
// request is the first with the key, so it goes ahead and must end with FinishIdempotent or
// AbandonIdempotent; the first answer when there is one; ErrIdempotencyInProgress while the
// first is under way; ErrIdempotencyMismatch when the key named another request. Keys older
// than IdempotencyTTL are forgotten.
func (s *Store) BeginIdempotent(ctx context.Context, token, key, request string) (*IdempotentAnswer, error) {
	now := s.d.nowExpr()
	if _, err := s.db.ExecContext(ctx, `DELETE FROM subsync_api_idempotency WHERE created_at < `+now+` - $1`,
		IdempotencyTTL.Microseconds()); err != nil {
		return nil, fmt.Errorf("forget old idempotency keys: %w", err)
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO subsync_api_idempotency (token, idem_key, request, created_at)
VALUES ($1, $2, $3, `+now+`)
ON CONFLICT (token, idem_key) DO UPDATE SET request = excluded.request, created_at = excluded.created_at,
  status = 0, location = '', content_type = '', body = NULL
WHERE subsync_api_idempotency.status = 0 AND subsync_api_idempotency.created_at < excluded.created_at - $4`,
		token, key, request, idempotencyStale.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("begin idempotent request: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return nil, nil
	}
	var a IdempotentAnswer
	var first string
	err = s.db.QueryRowContext(ctx, `SELECT request, status, location, content_type, body FROM subsync_api_idempotency
WHERE token = $1 AND idem_key = $2`, token, key).Scan(&first, &a.Status, &a.Location, &a.ContentType, &a.Body)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, ErrIdempotencyInProgress // forgotten between the two statements: rare, retried by the client
	case err != nil:
		return nil, fmt.Errorf("read idempotent answer: %w", err)
	case first != request:
		return nil, ErrIdempotencyMismatch
	case a.Status == 0:
		return nil, ErrIdempotencyInProgress
	}
	return &a, nil
}

// FinishIdempotent keeps the answer of the request begun with key.
func (s *Store) FinishIdempotent(ctx context.Context, token, key string, a IdempotentAnswer) error {
	_, err := s.db.ExecContext(ctx, `UPDATE subsync_api_idempotency SET status = $3, location = $4, content_type = $5, body = $6
WHERE token = $1 AND idem_key = $2`, token, key, a.Status, a.Location, a.ContentType, a.Body)
	if err != nil {
		return fmt.Errorf("keep idempotent answer: %w", err)
	}
	return nil
}

// AbandonIdempotent frees key: the request failed before it changed anything (or its answer
// is not to be kept), so the same key may be tried again.
func (s *Store) AbandonIdempotent(ctx context.Context, token, key string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM subsync_api_idempotency WHERE token = $1 AND idem_key = $2 AND status = 0`,
		token, key); err != nil {
		return fmt.Errorf("free idempotency key: %w", err)
	}
	return nil
}
