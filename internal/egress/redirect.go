package egress

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// MaxRedirects is the most hops CheckRedirect follows (net/http's own limit).
const MaxRedirects = 10

// safeHeaders are the headers that may follow a redirect to another origin: none of them
// can carry a credential. Everything else (Authorization, Cookie, a tenant's own headers
// such as an API key, a signature) is dropped there.
var safeHeaders = map[string]bool{
	"Accept":          true,
	"Accept-Encoding": true,
	"Content-Type":    true,
	"Content-Length":  true,
	"User-Agent":      true,
	"Referer":         true,
}

// CheckRedirect is an http.Client CheckRedirect: it refuses a hop whose host is a denied
// IP literal (a name is checked when it is dialled) and, once a hop's scheme, host or port differ from the first request's, keeps only headers
// that cannot carry credentials. net/http copies the first request's headers into every
// hop before it calls this, and itself drops Authorization only when the host name
// changes (not the port, not the scheme).
func (g *Guard) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	if err := g.CheckHost(req.URL.Host); err != nil {
		return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
	}
	if len(via) == 0 {
		return nil
	}
	if !SameOrigin(via[0].URL, req.URL) {
		StripCredentials(req)
	}
	return nil
}

// SameOrigin tells whether a and b have the same scheme, host and port (the scheme's
// default port when none is given).
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// StripCredentials removes every header but the safe ones, and the URL's user info.
func StripCredentials(req *http.Request) {
	for k := range req.Header {
		if !safeHeaders[http.CanonicalHeaderKey(k)] {
			delete(req.Header, k)
		}
	}
	req.URL.User = nil
}
