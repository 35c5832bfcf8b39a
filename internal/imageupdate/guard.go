package imageupdate

import (
	"fmt"
	"io"
	"net/http"
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

// guardedHTTP wraps auth so that the run's http(s) calls dial through guard (nil: no
// guard) and read at most maxBytes of answers in all (0: no limit). Each run gets its own
// client: the byte count is the run's.
func guardedHTTP(guard *egress.Guard, auth transport.AuthMethod, maxBytes int64) transport.AuthMethod {
	if guard == nil && maxBytes <= 0 {
		return auth
	}
	installDispatcher()
	hc := guard.Client(&limitedTransport{next: guard.Transport(), left: maxBytes, max: maxBytes}, 0)
	// Redirects: go-git's own policy and the guard's re-check of each hop.
	return &guardedAuth{inner: auth, client: githttp.NewClientWithOptions(hc, &githttp.ClientOptions{CacheMaxEntries: 4})}
}

// limitedTransport fails a run whose answers pass max bytes in all.
type limitedTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	left int64
	max  int64
}

func (l *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil || l.max <= 0 {
		return resp, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, t: l}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	t *limitedTransport
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.t.mu.Lock()
	b.t.left -= int64(n)
	over := b.t.left < 0
	b.t.mu.Unlock()
	if over {
		return n, fmt.Errorf("the repository sent more than %d bytes (the GitRepository's spec.maxSize): %w", b.t.max, ErrTooLarge)
	}
	return n, err
}
