package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/subsync/subsync/sink"
)

// serviceTimeoutDefault bounds how long an interactive command waits for the service before
// it gives up (--service-timeout).
const serviceTimeoutDefault = 30 * time.Second

// credentialHint is added to every 401 the service answers.
const credentialHint = "check api.user_id (or SUBSYNC_USER_ID) and the API key (SUBSYNC_API_KEY, api.api_key_file or api.api_key)"

// interactive bounds a call an interactive command makes to the service.
func (a *app) interactive(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.serviceTimeout)
}

// explainService turns an error from the service into one that names api.base_url and the
// cause a person can act on: connection refused, a name that does not resolve, TLS, a time
// out, or a 401 with where the credentials come from. Other errors are returned as they are.
func (a *app) explainService(err error) error {
	if err == nil {
		return nil
	}
	base := ""
	if a.cfg != nil {
		base = a.cfg.API.BaseURL
	}
	where := fmt.Sprintf("the subscriber service at api.base_url %s", base)
	var apiErr *sink.APIError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%s refused the credentials (401): %s: %w", where, credentialHint, err)
	case errors.As(err, &apiErr):
		return err
	case errors.As(err, &dnsErr): // before refused: a DNS server that refuses is a DNS failure
		return fmt.Errorf("%s cannot be reached: the host name %q does not resolve (DNS): %w", where, dnsErr.Name, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%s cannot be reached: connection refused (is the address right, is the service up?): %w", where, err)
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &recordErr):
		return fmt.Errorf("%s cannot be reached: TLS failed (certificate or protocol): %w", where, err)
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return fmt.Errorf("%s did not answer within %s (time out; --service-timeout changes the limit): %w", where, a.serviceTimeout, err)
	}
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
