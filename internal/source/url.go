package source

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// CheckURL reports whether raw is a repository URL a Fetch accepts (ErrURLInvalid when
// not): the controller refuses it before reading a Secret or dialling anything.
func CheckURL(raw string) error {
	_, err := parseURL(raw)
	return err
}

// parseURL turns a repository URL into a go-git endpoint. Accepted forms are
// http(s)://, ssh://, file:// and the scp-like user@host:path; a bare path is
// refused so that a typo cannot read the operator's own filesystem.
//
// The endpoint is the one parse of a URL: what go-git dials, what a checkout is stored
// under (RepositoryKey) and what the egress guard sees all come from it. Text that two
// parsers could read differently is refused rather than interpreted: a fragment or a
// query (https://evil.example#@git.corp/a/app.git reads as git.corp to a splitter and
// dials evil.example), user info in an http(s) or file URL and a password in any URL (the
// credentials belong in spec.secretRef; an ssh URL keeps its login name), and an
// endpoint that does not read back as the same host and port.
func parseURL(raw string) (*transport.Endpoint, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, fmt.Errorf("%w: url is empty", ErrURLInvalid)
	}
	if strings.ContainsAny(raw, "\x00\n\r\t") {
		return nil, fmt.Errorf("%w: url contains control characters", ErrURLInvalid)
	}
	if strings.ContainsAny(raw, "#?") {
		// Not quoted: redact.URL reads the authority up to the last "@", so it would show
		// https://evil.example#@git.corp/a/app.git as git.corp's URL.
		return nil, fmt.Errorf("%w: the url has a query or a fragment (\"?\" or \"#\"), which a Git URL does not need", ErrURLInvalid)
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
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s cannot be parsed", ErrURLInvalid, redact.URL(raw))
		}
		if err := checkUserInfo(strings.ToLower(scheme), u.User); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrURLInvalid, redact.URL(raw), err)
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
	if err := checkEndpoint(ep); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrURLInvalid, redact.URL(raw), err)
	}
	return ep, nil
}

// checkUserInfo refuses credentials in a URL: none at all over http(s) and file, a login
// name only over ssh.
func checkUserInfo(scheme string, user *url.Userinfo) error {
	if user == nil {
		return nil
	}
	if _, hasPassword := user.Password(); hasPassword {
		return fmt.Errorf("the url holds a password (credentials belong in spec.secretRef)")
	}
	if scheme != "ssh" {
		return fmt.Errorf("the url holds user info (credentials belong in spec.secretRef)")
	}
	return nil
}

// checkEndpoint makes sure the endpoint reads back as itself: go-git's HTTP transport
// dials what net/url makes of ep.String(), and its SSH transport the host and port, so a
// path holding "?" or "#" (decoded from %3F, %23) or a host holding "@" or "/" would dial
// something else than what the checkout is stored under.
func checkEndpoint(ep *transport.Endpoint) error {
	if strings.ContainsAny(ep.Path, "?#") {
		return fmt.Errorf("the path holds an encoded \"?\" or \"#\"")
	}
	if strings.ContainsAny(ep.Host, "@/\\%?#") || strings.ContainsAny(ep.User, "@:/") {
		return fmt.Errorf("the host or user name holds a character that is not allowed there")
	}
	if ep.Protocol != "http" && ep.Protocol != "https" {
		return nil
	}
	u, err := url.Parse(ep.String())
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		!strings.EqualFold(strings.Trim(ep.Host, "[]"), u.Hostname()) || dialPort(ep.Protocol, u.Port()) != dialPort(ep.Protocol, portString(ep.Port)) {
		return fmt.Errorf("the url does not read back as the same host and path")
	}
	return nil
}

func portString(p int) string {
	if p <= 0 {
		return ""
	}
	return strconv.Itoa(p)
}

// defaultPorts are the ports the transports dial when a URL names none.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ssh": "22"}

// dialPort is the port dialled for a URL's port text.
func dialPort(protocol, port string) string {
	if port == "" {
		return defaultPorts[protocol]
	}
	return port
}

// endpointID is the endpoint a checkout belongs to: scheme, login name (ssh), host in
// lower case, port (the scheme's default when none is given) and path without trailing
// slashes, as the transports dial them. The path is kept as it is (an scp-like path is
// relative to the login's home, an ssh:// one is not), after a space, which a parsed
// host cannot hold.
func endpointID(ep *transport.Endpoint) string {
	if ep.Protocol == "file" {
		return "file:// " + strings.TrimRight(ep.Path, "/")
	}
	user := ""
	if ep.Protocol == "ssh" {
		user = ep.User + "@"
	}
	return ep.Protocol + "://" + user + strings.ToLower(ep.Host) + ":" + dialPort(ep.Protocol, portString(ep.Port)) + " " +
		strings.TrimRight(ep.Path, "/")
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
