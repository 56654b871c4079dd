package web

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/subsync/subsync/state"
)

// Idempotency-Key: a POST may carry one (up to 255 characters). The first request with a
// key, per token, goes ahead; its answer, when it succeeded (2xx), is kept in the database
// for state.IdempotencyTTL and given again, with "Idempotent-Replayed: true", to each later
// request with the key, whose body is not read: it queues and stages nothing. A second
// request while the first is under way gets 409; a key used before for another method or
// path gets 422. An answer that failed is not kept, so the same key may be tried again; nor
// is a dry run's (it changes nothing, and its answer may hold addresses, which the database
// keeps nowhere but where an erasure finds them).

// maxIdempotencyKey bounds an Idempotency-Key.
const maxIdempotencyKey = 255

// keptWriter passes the answer through and keeps a copy of it.
type keptWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	noKeep bool
}

func (w *keptWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *keptWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(p)
	return w.ResponseWriter.Write(p)
}

type keptKey struct{}

// dontKeep says that the answer of r is not to be kept for its Idempotency-Key.
func dontKeep(r *http.Request) {
	if kw, ok := r.Context().Value(keptKey{}).(*keptWriter); ok {
		kw.noKeep = true
	}
}

func (s *Server) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if r.Method != http.MethodPost || key == "" {
			next.ServeHTTP(w, r)
			return
		}
		if len(key) > maxIdempotencyKey {
			s.problem(w, http.StatusBadRequest, probInvalid, "Idempotency-Key", "the Idempotency-Key is longer than 255 characters")
			return
		}
		ctx := r.Context()
		token := callOf(ctx).token
		store := s.b.State()
		first, err := store.BeginIdempotent(ctx, token, key, r.Method+" "+r.URL.Path)
		switch {
		case errors.Is(err, state.ErrIdempotencyInProgress):
			s.problem(w, http.StatusConflict, probKeyInUse, "Idempotency-Key",
				"a request with this Idempotency-Key is under way: wait for its answer, then send it again for the same answer")
			return
		case errors.Is(err, state.ErrIdempotencyMismatch):
			s.problem(w, http.StatusUnprocessableEntity, probKeyReused, "Idempotency-Key",
				"this Idempotency-Key was used within the last 24 hours for another request: use a new key for each request")
			return
		case err != nil:
			s.apiFail(w, r, err)
			return
		case first != nil:
			h := w.Header()
			if first.Location != "" {
				h.Set("Location", first.Location)
			}
			h.Set("Content-Type", first.ContentType)
			h.Set("Cache-Control", "no-store")
			h.Set("Idempotent-Replayed", "true")
			w.WriteHeader(first.Status)
			_, _ = w.Write(first.Body)
			return
		}
		kw := &keptWriter{ResponseWriter: w}
		done := false
		defer func() {
			bg := context.WithoutCancel(ctx)
			var err error
			if done && kw.status >= 200 && kw.status < 300 && !kw.noKeep {
				err = store.FinishIdempotent(bg, token, key, state.IdempotentAnswer{Status: kw.status,
					Location: w.Header().Get("Location"), ContentType: w.Header().Get("Content-Type"), Body: kw.body.Bytes()})
			} else {
				err = store.AbandonIdempotent(bg, token, key)
			}
			if err != nil {
				s.log.ErrorContext(bg, "Idempotency-Key not recorded", slog.String("token", token), slog.Any("error", err))
			}
		}()
		next.ServeHTTP(kw, r.WithContext(context.WithValue(ctx, keptKey{}, kw)))
		done = true
	})
}
