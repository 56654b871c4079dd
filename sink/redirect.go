package sink

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrUnsafeRedirect is wrapped by the error of a request the service redirected from https to
// plain http, or to another host (or port). Such a redirect is not followed, so the credentials go nowhere else; it is
// permanent (see [IsPermanent]).
var ErrUnsafeRedirect = errors.New("redirect not followed: it goes to another host or off https")

// maxRedirects is how many redirects within the service one request follows (as net/http).
const maxRedirects = 10

// checkRedirect allows a redirect only to the same host, and never from https to http. Go's
// own rule forwards the Authorization header to the same host name whatever the scheme and
// port, so a 307 to http:// would deliver the Basic credentials in clear text.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	first, prev := via[0].URL, via[len(via)-1].URL
	switch {
	case prev.Scheme == "https" && req.URL.Scheme != "https",
		first.Scheme == "https" && req.URL.Scheme != "https",
		!strings.EqualFold(req.URL.Host, first.Host):
		return fmt.Errorf("%w: %s to %s", ErrUnsafeRedirect, bareURL(prev), bareURL(req.URL))
	}
	return nil
}

// bareURL is u without user information.
func bareURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}
