package sinktest

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"
	"unsafe"
)

// scratch is the memory a bulkinsert or a create works in: its body, read into a buffer
// sized by its Content-Length and parsed in place (see bodyString), and the arrays the
// upserts are parsed into. It is kept in scratchPool between requests: the store copies what
// it keeps (see store.apply), so a request leaves nothing behind that points into it.
type scratch struct {
	body    []byte
	ups     []upsert
	kvs     []fieldKV
	members []member
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxPooledBody is the largest body buffer kept in scratchPool.
const maxPooledBody = 4 << 20

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(sc *scratch) {
	if cap(sc.body) > maxPooledBody {
		sc.body = nil
	}
	scratchPool.Put(sc)
}

// fields returns sc's array of fields, emptied, with room for n.
func (sc *scratch) fields(n int) []fieldKV {
	if cap(sc.kvs) < n {
		sc.kvs = make([]fieldKV, 0, n)
	}
	return sc.kvs[:0]
}

// upserts returns sc's array of upserts, emptied, with room for n.
func (sc *scratch) upserts(n int) []upsert {
	if cap(sc.ups) < n {
		sc.ups = make([]upsert, 0, n)
	}
	return sc.ups[:0]
}

// bodyString returns body as a string without copying it: the string is valid only as long
// as the buffer is not reused, and nothing made from it may be kept past the request.
func bodyString(body []byte) string { return unsafe.String(unsafe.SliceData(body), len(body)) }

// readBody reads the request body and checks its content type when it is not empty. On
// failure it has answered the request and returns errRejected.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var buf []byte
	return readBodyInto(w, r, &buf)
}

// readBodyInto is readBody reading into *buf, which it grows as needed.
func readBodyInto(w http.ResponseWriter, r *http.Request, buf *[]byte) ([]byte, error) {
	body := (*buf)[:0]
	if n := r.ContentLength; n > 0 && n <= maxBody && int(n) >= cap(body) {
		body = make([]byte, 0, n+1) // one more: the read that meets the end needs no growth
	}
	rd := http.MaxBytesReader(w, r.Body, maxBody)
	var err error
	for err == nil {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		var n int
		n, err = rd.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
	}
	*buf = body
	if err != io.EOF {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeStatus(w, http.StatusRequestEntityTooLarge, "413 Request entity too large")
			return nil, errRejected
		}
		writeStatus(w, http.StatusBadRequest, "400 Bad request")
		return nil, errRejected
	}
	if len(bytes.TrimSpace(body)) > 0 {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, ack{
				Status: "415 Unsupported media type", Message: "content-type must be application/json",
			})
			return nil, errRejected
		}
	}
	return body, nil
}
