package source

import (
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/gitsync-dev/gitsync/internal/redact"
)

// AuthMethod parses rawURL as a GitRepository's spec.url is parsed and returns the
// go-git auth method that a Fetch would use for it with a (nil: anonymous), for callers
// that run go-git themselves (gitsync bootstrap's clone and push). a.CA is not part of
// it: pass it as go-git's CABundle option.
func AuthMethod(rawURL string, a *Auth, timeout time.Duration) (transport.AuthMethod, error) {
	ep, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	auth, err := transportAuth(ep, a, "", timeout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", redact.URL(rawURL), err)
	}
	return auth, nil
}
