package sink

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MaxBatchRows is the most rows the service accepts in one bulkinsert request.
const MaxBatchRows = 1000

// BulkOptions are the query parameters of a bulkinsert. Empty strings are omitted.
type BulkOptions struct {
	ListID int64
	// Status and StatusMobile apply to every row of the request: active, unsubscribed,
	// bounce, or reactivate (which only a person should ask for).
	Status       string
	StatusMobile string
	// Tag is replace (the service's default) or merge.
	Tag string
}

// RowReject is a row the service refused, or that has no e-mail and was not sent.
type RowReject struct {
	Index  int // position in the rows slice given to InsertBatch or BulkInsert
	Email  string
	Reason string // the service's message, or "refused by the service (422)"
}

// BatchResult reports what became of the rows of an InsertBatch or BulkInsert.
type BatchResult struct {
	Sent     int         // rows acknowledged by the service
	Rejects  []RowReject // rows refused, ordered by Index
	Requests int         // HTTP attempts made, retries and 422 splitting included
	Retries  int         // attempts that repeated a request after a failure
}

// reasonRefused is a reject's reason when the service gave no message.
const reasonRefused = "refused by the service (422)"

// reasonNoEmail is the reason of a row that has no e-mail; it is not sent.
const reasonNoEmail = "no e-mail address"

// maxSameRefusals is how many rows sent alone may be refused in a row, for the same reason,
// with no request of the batch accepted yet, before InsertBatch suspects the 422 refuses the
// request as a whole (an unknown list, say) rather than particular rows; see InsertBatch.
const maxSameRefusals = 8

// bodyPool holds bulkinsert body buffers. Buffers grown past maxPooledBody are dropped.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

const maxPooledBody = 4 << 20

func (o BulkOptions) query(listParam string) (url.Values, error) {
	if o.ListID <= 0 {
		return nil, fmt.Errorf("%w: list id %d", ErrInvalidInput, o.ListID)
	}
	q := url.Values{listParam: {strconv.FormatInt(o.ListID, 10)}}
	for _, p := range []struct{ name, v string }{{"status", o.Status}, {"status_mobile", o.StatusMobile}} {
		switch p.v {
		case "":
			continue
		case StatusActive, StatusUnsubscribed, StatusBounce, StatusReactivate:
			q.Set(p.name, p.v)
		default:
			return nil, fmt.Errorf("%w: %s %q, want active, unsubscribed, bounce or reactivate", ErrInvalidInput, p.name, p.v)
		}
	}
	switch o.Tag {
	case "":
	case "replace", "merge":
		q.Set("tag", o.Tag)
	default:
		return nil, fmt.Errorf("%w: tag %q, want replace or merge", ErrInvalidInput, o.Tag)
	}
	return q, nil
}

// InsertBatch sends at most MaxBatchRows rows in one bulkinsert request (more is an error
// wrapping ErrInvalidInput, and nothing is sent). Rows without an e-mail are rejected
// without being sent.
//
// When the service refuses the request with 422 (or 413), the rows are split to isolate the ones it
// refuses, and every other row is delivered: if the service's message names a row
// ("row 3: …", 0-based), that row is sent alone and the others together; otherwise, or once
// a named row turns out to be accepted alone, the rows are split in halves, recursively.
// A row is only rejected on a 422 to a request holding that row alone, with the service's
// message as the reason. Each row is acknowledged at most once per call.
//
// A 422 that refuses the request as a whole (an unknown list) would make every row a
// reject: when maxSameRefusals rows sent alone are refused for the same reason and nothing
// has been accepted, up to three untried rows, spread over the batch, are sent alone; if
// they are all refused for that reason too, InsertBatch returns the 422 as its error, with
// no rejects.
//
// On an error other than a row's 422 (retries exhausted, ctx done, 401, …), the result counts
// what was acknowledged before it; sending the same rows again is harmless.
func (c *Client) InsertBatch(ctx context.Context, opts BulkOptions, rows []Subscriber) (BatchResult, error) {
	if len(rows) > MaxBatchRows {
		return BatchResult{}, fmt.Errorf("insert batch: %w: %d rows, at most %d per request", ErrInvalidInput, len(rows), MaxBatchRows)
	}
	q, err := opts.query(c.listParam())
	if err != nil {
		return BatchResult{}, fmt.Errorf("insert batch: %w", err)
	}
	b := &batch{c: c, query: q, rows: rows, trustHints: true}
	var idx []int // nil: every row
	for i := range rows {
		if strings.TrimSpace(rows[i].Email) == "" {
			idx = make([]int, 0, len(rows))
			break
		}
	}
	if idx != nil {
		for i := range rows {
			if strings.TrimSpace(rows[i].Email) == "" {
				b.res.Rejects = append(b.res.Rejects, RowReject{Index: i, Reason: reasonNoEmail})
				continue
			}
			idx = append(idx, i)
		}
		b.unsent = len(b.res.Rejects)
	}
	if len(rows) == 0 || (idx != nil && len(idx) == 0) {
		return b.res, nil
	}
	err = b.insert(ctx, idx)
	sortRejects(b.res.Rejects)
	return b.res, err
}

// BulkInsert sends any number of rows in requests of at most MaxBatchRows via InsertBatch,
// one after the other. Rejects' Index refers to the full rows slice. It stops at the first
// error, returning what was delivered until then.
func (c *Client) BulkInsert(ctx context.Context, opts BulkOptions, rows []Subscriber) (BatchResult, error) {
	var total BatchResult
	for start := 0; start < len(rows); start += MaxBatchRows {
		end := min(start+MaxBatchRows, len(rows))
		res, err := c.InsertBatch(ctx, opts, rows[start:end])
		total.Sent += res.Sent
		total.Requests += res.Requests
		total.Retries += res.Retries
		for _, r := range res.Rejects {
			r.Index += start
			total.Rejects = append(total.Rejects, r)
		}
		if err != nil {
			return total, fmt.Errorf("bulk insert rows %d to %d of %d: %w", start+1, end, len(rows), err)
		}
	}
	return total, nil
}

// batch is the state of one InsertBatch.
type batch struct {
	c     *Client
	query url.Values
	rows  []Subscriber
	res   BatchResult
	// trustHints: use the row a 422 message names, until one such row is accepted alone.
	trustHints bool
	accepted   bool   // some request of this batch was acknowledged
	unsent     int    // leading Rejects for rows not sent (no e-mail)
	done       []bool // rows acknowledged or rejected, once splitting began
	same       int    // rows refused alone in a row for sameReason, while nothing was accepted
	sameReason string
	confirmed  bool // the 422s are known to be about rows
}

// insert delivers rows idx (nil = all), splitting on 422.
func (b *batch) insert(ctx context.Context, idx []int) error {
	if b.done != nil {
		idx = b.pending(idx)
		if len(idx) == 0 {
			return nil
		}
	}
	n := len(idx)
	if idx == nil {
		n = len(b.rows)
	}
	err := b.send(ctx, idx)
	if err == nil {
		b.acknowledge(idx, n)
		return nil
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !splittable(apiErr.StatusCode) {
		return err
	}
	if b.done == nil {
		b.done = make([]bool, len(b.rows))
		for _, r := range b.res.Rejects[:b.unsent] {
			b.done[r.Index] = true
		}
	}
	if idx == nil {
		idx = make([]int, n)
		for i := range idx {
			idx[i] = i
		}
	}
	if n == 1 {
		return b.refused(ctx, idx[0], apiErr)
	}
	if r, ok := rowHint(apiErr.Message); ok && b.trustHints && r < n {
		if err := b.insert(ctx, idx[r:r+1]); err != nil {
			return err
		}
		if !b.isRejected(idx[r]) {
			b.trustHints = false // the named row went through: the numbering is not ours
		}
		return b.insert(ctx, idx) // the named row is done: pending leaves it out
	}
	mid := n / 2
	if err := b.insert(ctx, idx[:mid]); err != nil {
		return err
	}
	return b.insert(ctx, idx[mid:])
}

// refused records row i, refused alone, as a reject, unless the refusals so far look like
// the request being refused as a whole (see maxSameRefusals).
func (b *batch) refused(ctx context.Context, i int, apiErr *APIError) error {
	reason := rejectReason(apiErr)
	b.res.Rejects = append(b.res.Rejects, RowReject{Index: i, Email: b.rows[i].Email, Reason: reason})
	b.done[i] = true
	if b.accepted || b.confirmed {
		return nil
	}
	if reason != b.sameReason {
		b.same, b.sameReason = 0, reason
	}
	if b.same++; b.same < maxSameRefusals {
		return nil
	}
	// Suspicious: try up to three rows not tried yet, spread over the batch (the last, the
	// middle and the first quarter of the untried ones). One accepted or refused for another
	// reason shows the 422s are about rows.
	var untried []int
	for j := range b.rows {
		if !b.done[j] {
			untried = append(untried, j)
		}
	}
	if len(untried) == 0 {
		return nil
	}
	probes := []int{untried[len(untried)-1]}
	for _, p := range []int{untried[len(untried)/2], untried[len(untried)/4]} {
		if !slices.Contains(probes, p) {
			probes = append(probes, p)
		}
	}
	for _, p := range probes {
		err := b.send(ctx, []int{p})
		if err == nil {
			b.acknowledge([]int{p}, 1)
			return nil
		}
		var probeErr *APIError
		if !errors.As(err, &probeErr) || !splittable(probeErr.StatusCode) {
			return err
		}
		b.res.Rejects = append(b.res.Rejects, RowReject{Index: p, Email: b.rows[p].Email, Reason: rejectReason(probeErr)})
		b.done[p] = true
		if rejectReason(probeErr) != reason {
			b.confirmed = true // refused for another reason: the 422s are about rows
			return nil
		}
	}
	b.res.Rejects = b.res.Rejects[:b.unsent]
	return fmt.Errorf("the service refused %d rows sent alone for the same reason and accepted none, so it refuses the request as a whole: %w", b.same+len(probes), apiErr)
}

// acknowledge records rows idx (nil = all n rows) as delivered.
func (b *batch) acknowledge(idx []int, n int) {
	b.res.Sent += n
	b.accepted = true
	if b.done != nil {
		for _, i := range idx {
			b.done[i] = true
		}
	}
}

func (b *batch) isRejected(i int) bool {
	for _, r := range b.res.Rejects[b.unsent:] {
		if r.Index == i {
			return true
		}
	}
	return false
}

// pending returns the rows of idx not yet done (idx itself when none is done).
func (b *batch) pending(idx []int) []int {
	if idx == nil {
		idx = make([]int, 0, len(b.rows))
		for i := range b.rows {
			if !b.done[i] {
				idx = append(idx, i)
			}
		}
		return idx
	}
	for k, i := range idx {
		if b.done[i] {
			out := append(make([]int, 0, len(idx)-1), idx[:k]...)
			for _, j := range idx[k+1:] {
				if !b.done[j] {
					out = append(out, j)
				}
			}
			return out
		}
	}
	return idx
}

// send makes one bulkinsert request of rows idx (nil = all) and checks its acknowledgement.
func (b *batch) send(ctx context.Context, idx []int) error {
	bufp := bodyPool.Get().(*[]byte)
	buf := append((*bufp)[:0], '[')
	if idx == nil {
		for i := range b.rows {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = b.rows[i].AppendJSON(buf)
		}
	} else {
		for k, i := range idx {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = b.rows[i].AppendJSON(buf)
		}
	}
	buf = append(buf, ']')
	defer func() {
		// do has revoked every reader of buf: it may be reused.
		if cap(buf) <= maxPooledBody {
			*bufp = buf[:0]
			bodyPool.Put(bufp)
		}
	}()
	return b.c.sendListed(b.query, func(q url.Values) error {
		cl := &call{method: http.MethodPost, route: "/subscribers/bulkinsert", path: "/subscribers/bulkinsert", query: q, body: buf}
		resp, err := b.c.do(ctx, cl)
		b.res.Requests += resp.attempts
		b.res.Retries += max(resp.attempts-1, 0)
		if err != nil {
			return err
		}
		_, err = b.c.checkAck(cl, resp)
		return err
	})
}

var rowHintRE = regexp.MustCompile(`(?i)\brow\s+#?(\d+)\b`)

// rowHint reads the row a 422 message names ("row 3: invalid email").
func rowHint(msg string) (int, bool) {
	m := rowHintRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

var rowPrefixRE = regexp.MustCompile(`(?i)^\s*row\s+#?\d+\s*[:\-–]\s*`)

// rejectReason is the service's message for a row sent alone, without its "row 0: ".
func rejectReason(e *APIError) string {
	if msg := strings.TrimSpace(rowPrefixRE.ReplaceAllString(e.Message, "")); msg != "" {
		return msg
	}
	if e.StatusCode != http.StatusUnprocessableEntity {
		return fmt.Sprintf("refused by the service (%d)", e.StatusCode)
	}
	return reasonRefused
}

// splittable reports whether a bulkinsert refused with this status is split to find the
// rows at fault: 422 (a row the service refuses), and 413 (the body too large for it).
func splittable(code int) bool {
	return code == http.StatusUnprocessableEntity || code == http.StatusRequestEntityTooLarge
}

func sortRejects(r []RowReject) {
	slices.SortFunc(r, func(a, b RowReject) int { return cmp.Compare(a.Index, b.Index) })
}
