package source

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// parseURL turns a repository URL into a go-git endpoint. Accepted forms are
// http(s)://, ssh://, file:// and the scp-like user@host:path; a bare path is
// refused so that a typo cannot read the operator's own filesystem.
func parseURL(raw string) (*transport.Endpoint, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, fmt.Errorf("%w: url is empty", ErrURLInvalid)
	}
	if strings.ContainsAny(raw, "\x00\n\r") {
		return nil, fmt.Errorf("%w: url contains control characters", ErrURLInvalid)
	}
	scheme, _, hasScheme := strings.Cut(raw, "://")
	if hasScheme {
		switch strings.ToLower(scheme) {
		case "http", "https", "ssh", "file":
		default:
			return nil, fmt.Errorf("%w: unsupported scheme %q in %s", ErrURLInvalid, scheme, redact.URL(raw))
		}
		// Parse with net/url first: go-git's own parser returns net/url's
		// error text, which repeats the whole URL including any password.
		if _, err := url.Parse(raw); err != nil {
			return nil, fmt.Errorf("%w: %s cannot be parsed", ErrURLInvalid, redact.URL(raw))
		}
	} else if !isSCPLike(raw) {
		return nil, fmt.Errorf("%w: %s is neither a URL with a scheme nor user@host:path", ErrURLInvalid, redact.URL(raw))
	}

	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s cannot be parsed", ErrURLInvalid, redact.URL(raw))
	}
	if !hasScheme && ep.Protocol != "ssh" {
		// go-git falls back to a local path when its scp-like pattern does
		// not match (it wants a slash in the path); refuse that.
		return nil, fmt.Errorf("%w: %s is not a valid user@host:path", ErrURLInvalid, redact.URL(raw))
	}
	switch ep.Protocol {
	case "http", "https", "ssh":
		if ep.Host == "" {
			return nil, fmt.Errorf("%w: %s has no host", ErrURLInvalid, redact.URL(raw))
		}
	case "file":
	default:
		return nil, fmt.Errorf("%w: unsupported protocol %q in %s", ErrURLInvalid, ep.Protocol, redact.URL(raw))
	}
	if ep.Path == "" || ep.Path == "/" {
		return nil, fmt.Errorf("%w: %s has no repository path", ErrURLInvalid, redact.URL(raw))
	}
	return ep, nil
}

// isSCPLike reports whether raw has the form [user@]host:path, as git accepts
// for SSH. A colon after the first slash means a local path, as in git.
func isSCPLike(raw string) bool {
	colon := strings.Index(raw, ":")
	if colon <= 0 {
		return false
	}
	if slash := strings.Index(raw, "/"); slash >= 0 && slash < colon {
		return false
	}
	host := raw[:colon]
	if at := strings.LastIndex(host, "@"); at >= 0 {
		host = host[at+1:]
	}
	return host != "" && colon < len(raw)-1
}

// urlPassword returns the password embedded in raw's user info, if any, so
// that it can be redacted from error text.
func urlPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}
