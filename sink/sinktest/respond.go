package sinktest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// maxBody caps a request body. 1000 rows with every field filled stay far below it.
const maxBody = 32 << 20

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// bufferWriter holds a response that is then sent broken (the drop fault).
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferWriter) Header() http.Header { return w.header }
func (w *bufferWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}
func (w *bufferWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

// drop sends the status line, the headers and half of the body of buf, then closes the
// connection. Where the connection cannot be hijacked (HTTP/2) the stream is aborted.
func drop(w http.ResponseWriter, buf *bufferWriter) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer conn.Close()
	body := buf.body.Bytes()
	fmt.Fprintf(rw, "HTTP/1.1 %d %s\r\n", buf.status, http.StatusText(buf.status))
	buf.header.Set("Content-Length", strconv.Itoa(len(body)+1))
	_ = buf.header.Write(rw)
	_, _ = rw.WriteString("\r\n")
	_, _ = rw.Write(body[:len(body)/2])
	_ = rw.Flush()
}

// ack is the service's acknowledgement body.
type ack struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	ID      int64  `json:"id,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sinktest: encode response: %v", err))
	}
	writeRaw(w, code, b)
}

func writeRaw(w http.ResponseWriter, code int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func writeStatus(w http.ResponseWriter, code int, status string) {
	writeJSON(w, code, ack{Status: status})
}

func writeOK(w http.ResponseWriter) { writeStatus(w, http.StatusOK, "200 Success") }

// write422 answers the service's validation failure with a reason.
// Seed422 is the body of every 422 the spec shows, and all the Emulator answers without
// WithRowMessages.
const Seed422 = `{"status":"422 Unprocessable entity"}`

// seedBody422 makes h answer a 422 with exactly Seed422, whatever message it wrote.
func seedBody422(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, ri *reqInfo) {
		h(&seed422Writer{ResponseWriter: w}, r, ri)
	}
}

type seed422Writer struct {
	http.ResponseWriter
	replaced bool
}

func (w *seed422Writer) WriteHeader(code int) {
	if code != http.StatusUnprocessableEntity {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.replaced = true
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(Seed422)))
	w.ResponseWriter.WriteHeader(code)
	_, _ = io.WriteString(w.ResponseWriter, Seed422)
}

func (w *seed422Writer) Write(b []byte) (int, error) {
	if w.replaced {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func write422(w http.ResponseWriter, format string, args ...any) {
	writeJSON(w, http.StatusUnprocessableEntity, ack{Status: "422 Unprocessable entity", Message: fmt.Sprintf(format, args...)})
}

// errRejected carries an error already answered to the client.
var errRejected = errors.New("request rejected")

// decodeObject decodes a JSON object body into v, refusing unknown fields. On failure it has
// answered 422 and returns errRejected.
func decodeObject(w http.ResponseWriter, body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		write422(w, "body must be a JSON object: %v", err)
		return errRejected
	}
	if _, err := dec.Token(); err != io.EOF {
		write422(w, "body must hold one JSON object")
		return errRejected
	}
	return nil
}

func formatMS(t int64) string { return time.UnixMilli(t).UTC().Format(TimeFormat) }

// obj appends a JSON object with its keys in a fixed order to b.
type obj struct {
	b     []byte
	start int
}

func newObj(dst []byte) obj { return obj{b: dst, start: len(dst)} }

func (o *obj) key(k string) {
	if len(o.b) == o.start {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = appendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *obj) str(k, v string) { o.key(k); o.b = appendString(o.b, v) }
func (o *obj) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}
func (o *obj) null(k string) { o.key(k); o.b = append(o.b, "null"...) }

// strOrNull writes v, or null when v is empty.
func (o *obj) strOrNull(k, v string) {
	if v == "" {
		o.null(k)
		return
	}
	o.str(k, v)
}

// done closes the object and returns the extended buffer.
func (o *obj) done() []byte {
	if len(o.b) == o.start {
		return append(o.b, "{}"...)
	}
	return append(o.b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string (invalid UTF-8 becomes U+FFFD).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\u202`...)
			dst = append(dst, hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
