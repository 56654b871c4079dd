package sink

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
)

// The two forms of the query parameter that names the list of a bulkinsert or a single
// create: the spec's, and the one a public PHP client sends (see Config.ListIDArray).
const (
	ListParamScalar = "subscriber_list_id"
	ListParamArray  = "subscriber_list_id[]"
)

// ListParam is the name of the list parameter in one form.
func ListParam(array bool) string {
	if array {
		return ListParamArray
	}
	return ListParamScalar
}

// listForm is what a Client knows of the form of the list parameter the service takes.
type listForm struct {
	array atomic.Bool // the form sent
	known atomic.Bool // configured, remembered, or seen accepted: never changed by a request
	// mu is held by a request naming a list while the form is not known, so that requests
	// sent in the wrong form are not many at once: at most one is refused before the other
	// form is tried.
	mu     sync.Mutex
	probed bool // the other form was tried once (under mu)
}

// ListIDForm returns the list parameter the client sends and whether it is known to work
// (configured, set by SetListIDForm, or seen accepted by the service).
func (c *Client) ListIDForm() (param string, known bool) {
	return ListParam(c.form.array.Load()), c.form.known.Load()
}

// SetListIDForm makes the client send the list in the given form from now on, with no more
// detection: a form remembered from an earlier process. It does nothing when the form was
// configured (Config.ListIDDetect false).
func (c *Client) SetListIDForm(array bool) {
	if !c.cfg.ListIDDetect {
		return
	}
	c.form.mu.Lock()
	defer c.form.mu.Unlock()
	c.form.array.Store(array)
	c.form.known.Store(true)
}

// listParam is the query parameter that names the list (see Config.ListIDArray).
func (c *Client) listParam() string { return ListParam(c.form.array.Load()) }

// sendListed sends a request whose query q names a list (under either form's key) through
// send, in the form the service takes. While the form is not known (Config.ListIDDetect and
// nothing learnt yet) requests naming a list go one at a time; the first one the service
// accepts makes its form known, and the first one it refuses as a whole (422 or 400) is sent
// once again in the other form: accepted, that form is known from then on. Each time a form
// becomes known it is logged and given to Config.OnListIDForm.
func (c *Client) sendListed(q url.Values, send func(url.Values) error) error {
	if c.form.known.Load() {
		setListParam(q, c.form.array.Load())
		return send(q)
	}
	c.form.mu.Lock()
	defer c.form.mu.Unlock()
	array := c.form.array.Load()
	setListParam(q, array)
	err := send(q)
	if c.form.known.Load() {
		return err
	}
	if err == nil {
		c.learnListForm(array, "the service accepted it")
		return nil
	}
	var apiErr *APIError
	if c.form.probed || !errors.As(err, &apiErr) ||
		(apiErr.StatusCode != http.StatusUnprocessableEntity && apiErr.StatusCode != http.StatusBadRequest) {
		return err
	}
	c.form.probed = true
	setListParam(q, !array)
	if err2 := send(q); err2 == nil {
		c.form.array.Store(!array)
		c.learnListForm(!array, "the service refused "+ListParam(array)+" (HTTP "+strconv.Itoa(apiErr.StatusCode)+") and accepted "+ListParam(!array))
		return nil
	}
	c.log.Info("the service refused the list parameter in both forms: the refusal is about the request's rows, not its form",
		slog.String("list_param", ListParam(array)))
	setListParam(q, array)
	return err
}

// learnListForm makes a form known (under form.mu) and says so.
func (c *Client) learnListForm(array bool, why string) {
	c.form.known.Store(true)
	c.log.Info("the service takes the list parameter in this form", slog.String("list_param", ListParam(array)), slog.String("why", why))
	if c.cfg.OnListIDForm != nil {
		c.cfg.OnListIDForm(array)
	}
}

// setListParam names the list of q in one form, whichever form it was named in.
func setListParam(q url.Values, array bool) {
	from, to := ListParamArray, ListParamScalar
	if array {
		from, to = to, from
	}
	if v, ok := q[from]; ok {
		delete(q, from)
		q[to] = v
	}
}
