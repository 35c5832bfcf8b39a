package imageupdate

import (
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/gitsync-dev/gitsync/internal/egress"
)

// go-git's clone and push pick their HTTP transport from a process-wide table by the
// URL's scheme and take no client per call. To dial through the egress guard without
// changing that table's behaviour for anyone else, the table's http(s) entries become a
// dispatcher: a call whose auth is a guardedAuth runs on that guard's client, every other
// call on go-git's default client, as before.

var installGuarded sync.Once

func installDispatcher() {
	installGuarded.Do(func() {
		d := dispatcher{def: githttp.DefaultClient}
		client.InstallProtocol("http", d)
		client.InstallProtocol("https", d)
	})
}

type dispatcher struct{ def transport.Transport }

func (d dispatcher) pick(auth transport.AuthMethod) (transport.Transport, transport.AuthMethod) {
	if g, ok := auth.(*guardedAuth); ok {
		return g.client, g.inner
	}
	return d.def, auth
}

func (d dispatcher) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	t, a := d.pick(auth)
	return t.NewUploadPackSession(ep, a)
}

func (d dispatcher) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	t, a := d.pick(auth)
	return t.NewReceivePackSession(ep, a)
}

// guardedAuth carries the HTTP client of a guard (and the real credentials) to the
// dispatcher.
type guardedAuth struct {
	inner  transport.AuthMethod // nil: anonymous
	client transport.Transport
}

func (g *guardedAuth) Name() string   { return "guarded" }
func (g *guardedAuth) String() string { return "guarded" }

var (
	guardClientsMu sync.Mutex
	guardClients   = map[*egress.Guard]transport.Transport{}
)

// guardedHTTP wraps auth so that the call dials through guard (nil: auth unchanged).
func guardedHTTP(guard *egress.Guard, auth transport.AuthMethod) transport.AuthMethod {
	if guard == nil {
		return auth
	}
	installDispatcher()
	guardClientsMu.Lock()
	defer guardClientsMu.Unlock()
	c, ok := guardClients[guard]
	if !ok {
		// Redirects: go-git's own policy and the guard's re-check of each hop.
		c = githttp.NewClientWithOptions(guard.Client(guard.Transport(), 0), &githttp.ClientOptions{CacheMaxEntries: 16})
		guardClients[guard] = c
	}
	return &guardedAuth{inner: auth, client: c}
}
