// Package egress refuses connections to addresses a tenant must not reach.
//
// Every address gitsync dials for a tenant (a HelmRepository's index and charts, an OCI
// registry, a Provider's address, a Git URL over http(s), ssh:// or scp-like user@host:path)
// goes through a Guard: the address
// is checked after name resolution, when the socket connects (a net.Dialer Control hook),
// so a name that resolves to an allowed address at one moment and to a denied one the next
// (DNS rebinding) is still refused, and so is every hop of a redirect.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultDeny are the ranges refused unless `gitsync run --deny-egress` says otherwise:
// loopback, link-local (which holds the cloud metadata address 169.254.169.254) and the
// unspecified addresses (which connect to the local host). An install adds the cluster's
// own ranges (pods, services, nodes) and any other metadata address (AWS's IPv6
// fd00:ec2::254 is a unique-local address, not link-local).
var DefaultDeny = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("0.0.0.0/32"),
	netip.MustParsePrefix("::/128"),
}

// ErrDenied is the error of a refused connection (wrapped in a *DeniedError).
var ErrDenied = errors.New("egress denied")

// DeniedError names the address that was refused and the range that refused it.
type DeniedError struct {
	Addr  netip.Addr
	Range netip.Prefix
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("connecting to %s is not allowed (in %s, refused by --deny-egress)", e.Addr, e.Range)
}

// Unwrap makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Unwrap() error { return ErrDenied }

// Denied returns the range of deny that holds addr, if any. An IPv4-mapped IPv6 address
// (::ffff:127.0.0.1) is checked as the IPv4 address it is, and a zone is ignored. An
// invalid address is denied (with the zero Prefix).
func Denied(addr netip.Addr, deny []netip.Prefix) (netip.Prefix, bool) {
	if !addr.IsValid() {
		return netip.Prefix{}, true
	}
	addr = addr.Unmap().WithZone("")
	for _, p := range deny {
		if p.Contains(addr) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// ParseCIDRs parses a comma-separated list of CIDRs (a bare address is a single-address
// range). The empty string is the empty, non-nil list: no guard.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	out := []netip.Prefix{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", part)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR: %w", part, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// FormatCIDRs is the inverse of ParseCIDRs.
func FormatCIDRs(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// Guard refuses connections to its denied ranges. A nil *Guard allows every address,
// and its methods still work (the transports it builds are plain ones).
type Guard struct {
	deny []netip.Prefix

	// register and id: the guard's name as a proxy for SSH (ProxyURL).
	register sync.Once
	id       string
}

// New returns a Guard refusing deny; nil (no guard) when deny is empty.
func New(deny []netip.Prefix) *Guard {
	if len(deny) == 0 {
		return nil
	}
	return &Guard{deny: append([]netip.Prefix(nil), deny...)}
}

// Check returns a *DeniedError when addr is in a denied range.
func (g *Guard) Check(addr netip.Addr) error {
	if g == nil {
		return nil
	}
	if p, ok := Denied(addr, g.deny); ok {
		return &DeniedError{Addr: addr, Range: p}
	}
	return nil
}

// CheckHost checks a host that is an IP literal (with or without brackets and port);
// a name passes, as it is checked once resolved, when it is dialled.
func (g *Guard) CheckHost(hostport string) error {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(host); err == nil {
		return g.Check(a)
	}
	return nil
}

// Control is a net.Dialer Control hook: it runs after the name was resolved, before the
// socket connects, with the address that is about to be dialled.
func (g *Guard) Control(_, address string, _ syscall.RawConn) error {
	if g == nil {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check address %q", ErrDenied, address)
	}
	return g.Check(ap.Addr())
}

// Dialer returns a dialer with http.DefaultTransport's timeouts and the guard's Control.
func (g *Guard) Dialer() *net.Dialer {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if g != nil {
		d.Control = g.Control
	}
	return d
}

// Transport returns a clone of http.DefaultTransport that dials through the guard. A
// proxy (from the environment) is dialled through the guard too; what it reaches beyond
// is its own decision.
func (g *Guard) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = g.Dialer().DialContext
	return t
}

// Client returns a client over rt (the guard's Transport when nil) whose redirects are
// checked by CheckRedirect.
func (g *Guard) Client(rt http.RoundTripper, timeout time.Duration) *http.Client {
	if rt == nil {
		rt = g.Transport()
	}
	return &http.Client{Transport: rt, Timeout: timeout, CheckRedirect: g.CheckRedirect}
}
