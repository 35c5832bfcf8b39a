package egress

import (
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/net/proxy"
)

// proxyScheme is the proxy URL scheme under which the guards dial (see ProxyURL).
const proxyScheme = "gitsync-egress"

var (
	guards      sync.Map // guard id → *Guard
	lastGuardID atomic.Uint64
)

// The scheme is registered before any dial can read x/net/proxy's table of schemes,
// which it reads without a lock.
func init() { proxy.RegisterDialerType(proxyScheme, guardDialer) }

// ProxyURL is a proxy URL that makes go-git's SSH transport (ssh:// and scp-like
// user@host:path URLs) dial through the guard: set it as the endpoint's Proxy.URL. That
// transport dials with golang.org/x/net/proxy and takes no dialer of its own, so the guard
// registers itself as a proxy scheme whose "proxy" is the guard's Dialer: the address is
// checked once resolved, when the socket connects, as for HTTP. "" (no proxy) for a nil
// Guard.
//
// A proxy that the environment names (ALL_PROXY) is not used for SSH while a guard is on.
func (g *Guard) ProxyURL() string {
	if g == nil {
		return ""
	}
	g.register.Do(func() {
		g.id = strconv.FormatUint(lastGuardID.Add(1), 10)
		guards.Store(g.id, g)
	})
	return proxyScheme + "://" + g.id
}

// guardDialer is the proxy.Dialer of a ProxyURL: the guard's Dialer, which is also a
// proxy.ContextDialer (go-git's SSH transport requires one).
func guardDialer(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
	g, ok := guards.Load(u.Host)
	if !ok {
		return nil, fmt.Errorf("%w: no egress guard %q", ErrDenied, u.Host)
	}
	return g.(*Guard).Dialer(), nil
}
