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

// maxLeadingRefusals is how many rows in a row, with none accepted yet, may be refused one
// by one before a 422 is taken to refuse the request as a whole (an unknown list, say)
// rather than particular rows.
const maxLeadingRefusals = 8

// bodyPool holds bulkinsert body buffers. Buffers grown past maxPooledBody are dropped.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

const maxPooledBody = 4 << 20

func (o BulkOptions) query() (url.Values, error) {
	if o.ListID <= 0 {
		return nil, fmt.Errorf("%w: list id %d", ErrInvalidInput, o.ListID)
	}
	q := url.Values{"subscriber_list_id": {strconv.FormatInt(o.ListID, 10)}}
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
// When the service refuses the request with 422, the rows are split to isolate the ones it
// refuses, and every other row is delivered: if the service's message names a row
// ("row 3: …"), that row is sent alone and the others together; otherwise the rows are
// split in halves, recursively. A row is only ever rejected on a 422 to a request holding
// that row alone, with the service's message as the reason. If the first
// maxLeadingRefusals rows tried alone are all refused and none accepted, the 422 is
// taken to refuse the request as a whole, and InsertBatch returns it as an error.
//
// On an error other than a 422 (retries exhausted, ctx done, 401, …), the result counts
// what was acknowledged before it; sending the same rows again is harmless.
func (c *Client) InsertBatch(ctx context.Context, opts BulkOptions, rows []Subscriber) (BatchResult, error) {
	if len(rows) > MaxBatchRows {
		return BatchResult{}, fmt.Errorf("insert batch: %w: %d rows, at most %d per request", ErrInvalidInput, len(rows), MaxBatchRows)
	}
	q, err := opts.query()
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
	// rowLevel: a row named by a 422 message was refused alone, so the service refuses
	// rows, not the request.
	rowLevel bool
	accepted bool // some request of this batch was acknowledged
	unsent   int  // leading Rejects for rows not sent (no e-mail)
	leading  int  // rows refused alone before any acceptance (in the halving path)
}

// insert delivers rows idx (nil = all), splitting on 422.
func (b *batch) insert(ctx context.Context, idx []int) error {
	n := len(idx)
	if idx == nil {
		n = len(b.rows)
	}
	err := b.send(ctx, idx)
	if err == nil {
		b.res.Sent += n
		b.accepted = true
		return nil
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnprocessableEntity {
		return err
	}
	if idx == nil {
		idx = make([]int, n)
		for i := range idx {
			idx[i] = i
		}
	}
	if n == 1 {
		b.res.Rejects = append(b.res.Rejects, RowReject{Index: idx[0], Email: b.rows[idx[0]].Email, Reason: rejectReason(apiErr)})
		return nil
	}
	if r, ok := rowHint(apiErr.Message); ok && b.trustHints && r < n {
		before := len(b.res.Rejects)
		if err := b.send1(ctx, idx[r]); err != nil {
			return err
		}
		if len(b.res.Rejects) == before {
			b.trustHints = false // the named row went through: the numbering is not ours
		} else {
			b.rowLevel = true
		}
		rest := make([]int, 0, n-1)
		rest = append(append(rest, idx[:r]...), idx[r+1:]...)
		return b.insert(ctx, rest)
	}
	mid := n / 2
	for _, half := range [][]int{idx[:mid], idx[mid:]} {
		if len(half) == 1 {
			before := len(b.res.Rejects)
			if err := b.send1(ctx, half[0]); err != nil {
				return err
			}
			if len(b.res.Rejects) > before && !b.accepted && !b.rowLevel {
				b.leading++
				if b.leading >= maxLeadingRefusals && len(b.rows) > maxLeadingRefusals {
					b.res.Rejects = b.res.Rejects[:b.unsent]
					return fmt.Errorf("the service refused each of the first %d rows sent alone and accepted none, so it refuses the request as a whole: %w", b.leading, apiErr)
				}
			}
			continue
		}
		if err := b.insert(ctx, half); err != nil {
			return err
		}
	}
	return nil
}

// send1 delivers one row, recording a reject on 422.
func (b *batch) send1(ctx context.Context, i int) error {
	return b.insert(ctx, []int{i})
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
	cl := &call{method: http.MethodPost, route: "/subscribers/bulkinsert", path: "/subscribers/bulkinsert", query: b.query, body: buf}
	resp, err := b.c.do(ctx, cl)
	// do has revoked every reader of buf: it may be reused.
	if cap(buf) <= maxPooledBody {
		*bufp = buf[:0]
		bodyPool.Put(bufp)
	}
	b.res.Requests += resp.attempts
	b.res.Retries += max(resp.attempts-1, 0)
	if err != nil {
		return err
	}
	_, err = b.c.checkAck(cl, resp)
	return err
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
	return reasonRefused
}

func sortRejects(r []RowReject) {
	slices.SortFunc(r, func(a, b RowReject) int { return cmp.Compare(a.Index, b.Index) })
}
