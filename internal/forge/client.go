package forge

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
)

// MaxResponseBytes caps one answer's body that the client reads (a page of comments or
// pull requests); a longer answer is an error, never read further.
const MaxResponseBytes = 4 << 20

// MaxPages caps the pages of a listing (100 items each): a pull request with more than
// 1,000 comments, or a repository with more than 1,000 open pull requests, is listed in
// part.
const MaxPages = 10

// DefaultTimeout bounds one request when the Provider sets no timeout.
const DefaultTimeout = 30 * time.Second

// Target is a forge and how to reach it: a Provider's type, its address (spec.address
// or the Secret's address; "" takes the public service's API) and its Secret's token
// and extra headers.
type Target struct {
	Type, Address, Token string
	Headers              map[string]string
	// UserAgent is sent with every request ("gitsync" when empty).
	UserAgent string
}

// IsForge tells whether a Provider type is one of the forges this package speaks to.
func IsForge(typ string) bool {
	return typ == gitsyncv1.ProviderGitHub || typ == gitsyncv1.ProviderGitLab || typ == gitsyncv1.ProviderGitea
}

// Client calls one forge's REST API. Errors never hold the token or the request URL
// (which may come from a Secret).
type Client struct {
	Target Target
	HTTP   *http.Client
}

// New returns a client of t over hc (nil: a client with DefaultTimeout and no guard).
func New(t Target, hc *http.Client) (*Client, error) {
	if !IsForge(t.Type) {
		return nil, fmt.Errorf("provider type %q is not a forge (github, gitlab, gitea)", t.Type)
	}
	if t.Type == gitsyncv1.ProviderGitea && t.Address == "" {
		return nil, fmt.Errorf("gitea provider needs an address (the server's URL)")
	}
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	return &Client{Target: t, HTTP: hc}, nil
}

// base is the API root: GitHub's API host, GitLab's /api/v4, Gitea's /api/v1.
func (t Target) base() string {
	b := strings.TrimSuffix(t.Address, "/")
	switch t.Type {
	case gitsyncv1.ProviderGitHub:
		if b == "" {
			b = "https://api.github.com"
		}
		return b
	case gitsyncv1.ProviderGitLab:
		if b == "" {
			b = "https://gitlab.com"
		}
		return b + "/api/v4"
	}
	return b + "/api/v1"
}

// Host is the host (and port) of the forge's API, for an egress check.
func (t Target) Host() string {
	u, err := url.Parse(t.base())
	if err != nil {
		return ""
	}
	return u.Host
}

// repoPath is the API path of a repository: /repos/{owner}/{repo}, or GitLab's
// /projects/{url-encoded path}.
func (t Target) repoPath(r Repo) string {
	if t.Type == gitsyncv1.ProviderGitLab {
		return "/projects/" + url.PathEscape(r.Path)
	}
	return "/repos/" + url.PathEscape(r.Owner()) + "/" + url.PathEscape(r.Name())
}

// NewRequest builds a request of the forge's API at path (below the API root) with a
// JSON body (nil: none) and the forge's authentication header.
func (t Target) NewRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base()+path, rd)
	if err != nil {
		// The URL may come from the Secret: do not repeat it.
		return nil, fmt.Errorf("the provider's address is not a valid URL")
	}
	// GitLab's API encodes the project path in one segment: url.Parse kept %2F in
	// RawPath; send it as written.
	req.URL.RawPath = req.URL.EscapedPath()
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	switch t.Type {
	case gitsyncv1.ProviderGitHub:
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
		req.Header.Set("Authorization", "Bearer "+t.Token)
	case gitsyncv1.ProviderGitLab:
		req.Header.Set("PRIVATE-TOKEN", t.Token)
	case gitsyncv1.ProviderGitea:
		req.Header.Set("Authorization", "token "+t.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	ua := t.UserAgent
	if ua == "" {
		ua = "gitsync"
	}
	req.Header.Set("User-Agent", ua)
	return req, nil
}

// do sends req and decodes a JSON answer into out (nil: the body is discarded),
// reading at most MaxResponseBytes. A 4xx or 5xx answer is a *StatusError.
func (c *Client) do(req *http.Request, out any) (http.Header, error) {
	resp, err := c.HTTP.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL, which may be secret
		}
		return nil, fmt.Errorf("calling %s: %w", c.Target.Type, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s's answer: %w", c.Target.Type, err)
	}
	if resp.StatusCode >= 300 {
		return nil, &StatusError{Forge: c.Target.Type, Code: resp.StatusCode, Status: resp.Status}
	}
	if len(data) > MaxResponseBytes {
		return nil, fmt.Errorf("%s's answer is larger than %d bytes", c.Target.Type, MaxResponseBytes)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("decoding %s's answer: %w", c.Target.Type, err)
		}
	}
	return resp.Header, nil
}

// StatusError is an answer of the forge with a 3xx, 4xx or 5xx status code.
type StatusError struct {
	Forge, Status string
	Code          int
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s answered %s", e.Forge, e.Status) }

// Retryable tells whether a retry may succeed (5xx, 429).
func (e *StatusError) Retryable() bool {
	return e.Code >= 500 || e.Code == http.StatusTooManyRequests
}

// HTTPClient is the client of a Provider's requests: its timeout and proxy, and the
// Secret's CA bundle added to the system roots, dialling through guard (nil: no guard);
// a redirect is checked by the guard and loses the credentials and the tenant's headers
// when it leaves the address's scheme, host or port. One transport per call: nothing
// keyed by a tenant's CA bundle is cached.
func HTTPClient(p *gitsyncv1.Provider, ca []byte, guard *egress.Guard) (*http.Client, error) {
	transport := guard.Transport()
	if p.Spec.Proxy != "" {
		proxy, err := url.Parse(p.Spec.Proxy)
		if err != nil {
			return nil, fmt.Errorf("parsing spec.proxy: %w", err)
		}
		transport.Proxy = http.ProxyURL(proxy)
	}
	if len(ca) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("the Secret's ca.crt holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return guard.Client(transport, p.GetTimeout().Duration), nil
}
