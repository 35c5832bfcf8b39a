package chartrepo

import (
	"container/list"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"time"
)

// transportCache keeps the most recently used transports, one per CA bundle: a tenant
// who writes a new ca.crt at every poll cannot grow it (nor the idle connections each
// transport holds) without bound. An evicted transport's idle connections are closed.
type transportCache struct {
	max   int
	order *list.List // of *cachedTransport, most recent first
	byKey map[string]*list.Element
}

type cachedTransport struct {
	key string
	t   *http.Transport
}

func newTransportCache(max int) *transportCache {
	return &transportCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *transportCache) get(key string) (*http.Transport, bool) {
	e, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedTransport).t, true
}

func (c *transportCache) add(key string, t *http.Transport) {
	c.byKey[key] = c.order.PushFront(&cachedTransport{key: key, t: t})
	for c.order.Len() > c.max {
		last := c.order.Back()
		old := c.order.Remove(last).(*cachedTransport)
		delete(c.byKey, old.key)
		old.t.CloseIdleConnections()
	}
}

func (c *transportCache) len() int { return c.order.Len() }

// transport returns the shared transport that trusts src.CA besides the system roots and
// dials through the Store's egress guard.
func (s *Store) transport(src Source) (*http.Transport, error) {
	sum := sha256.Sum256(src.CA)
	key := hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.transports.get(key); ok {
		return t, nil
	}
	t := s.opts.Egress.Transport()
	if len(src.CA) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(src.CA) {
			return nil, errors.New("ca.crt holds no PEM certificate")
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	s.transports.add(key, t)
	return t, nil
}

// client is an HTTP client over t whose redirects are re-checked by the egress guard and
// lose the credentials (basic auth, any other header that may carry one) once they leave
// the first request's scheme, host or port: net/http alone keeps Authorization on a
// redirect to another port of the same host, or from https to http.
// Every request of the client ends within timeout, its body read included (a server
// that trickles a byte a second is cut off there).
func (s *Store) client(t http.RoundTripper, timeout time.Duration) *http.Client {
	return s.opts.Egress.Client(t, timeout)
}

// deadlineTransport is http.Client.Timeout for the clients that go-containerregistry
// makes itself (it takes a transport, not a client): each request, its body read
// included, ends within timeout.
type deadlineTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (d deadlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), d.timeout)
	resp, err := d.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
