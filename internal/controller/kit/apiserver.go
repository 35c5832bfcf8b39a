package kit

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// APIServer tells when the API server answers again after it did not. It looks only
// while something failed (a reconcile, a watch): at rest it makes no request. The
// controllers use it so that what failed while the API server was away is retried as
// soon as it is back, not after the exponential backoff the failures built up
// meanwhile (client-go's watches wait up to 30 s between tries, the retry limiter up to
// minutes).
type APIServer struct {
	probe func(ctx context.Context) error
	every time.Duration
	log   logr.Logger

	mu        sync.Mutex
	looking   bool
	back      chan struct{} // closed when a look finds it answering again
	recovered []func()
}

// NewAPIServer returns an APIServer that asks GET /readyz of the API server of cfg (open
// to every client: system:public-info-viewer) every 200 ms while it does not answer.
// cfg must not be wrapped by the APIServer's Wrap.
func NewAPIServer(cfg *rest.Config) (*APIServer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 2 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rc := dc.RESTClient()
	return NewAPIServerProbe(func(ctx context.Context) error {
		return rc.Get().AbsPath("/readyz").Do(ctx).Error()
	}, 200*time.Millisecond), nil
}

// NewAPIServerProbe is NewAPIServer with a probe of its own, looking every interval.
func NewAPIServerProbe(probe func(ctx context.Context) error, every time.Duration) *APIServer {
	return &APIServer{probe: probe, every: every, back: make(chan struct{}), log: ctrllog.Log.WithName("apiserver")}
}

// OnRecovered registers f, called each time the API server answers again after a look
// found it away.
func (a *APIServer) OnRecovered(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recovered = append(a.recovered, f)
}

// Failed says that a request failed: it looks at the API server once and, when it does
// not answer, keeps looking until it does (then the OnRecovered functions run). It
// does not block.
func (a *APIServer) Failed() {
	a.mu.Lock()
	if a.looking {
		a.mu.Unlock()
		return
	}
	a.looking = true
	a.mu.Unlock()
	go a.look()
}

// WaitUp returns at once when the API server answers, else when it answers again (or
// ctx ends).
func (a *APIServer) WaitUp(ctx context.Context) {
	if a.probe(ctx) == nil {
		return
	}
	a.mu.Lock()
	back := a.back
	a.mu.Unlock()
	a.Failed()
	select {
	case <-back:
	case <-ctx.Done():
	}
}

// Wrap is a rest.Config's WrapTransport: a GET that finds the API server away
// (connection refused) waits until it answers again and is sent again, instead of
// failing. Informers' lists and watches so start again the moment it is back (client-go
// would retry them after a backoff that grew all the while it was away: up to 30 s),
// and a reconcile's reads wait for it rather than fail. Writes fail as before: their
// reconcile is retried by Retries. The probe must not go through a wrapped transport.
//
// A watch that would resume from a resourceVersion is the exception: it is answered at
// once with 410 Gone (see resumesWatch), so that its informer lists again (see expired).
func (a *APIServer) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		for {
			resp, err := rt.RoundTrip(req)
			if err == nil || req.Method != http.MethodGet || req.Body != nil || !utilnet.IsConnectionRefused(err) {
				return resp, err
			}
			if resumesWatch(req) {
				a.Failed()
				return expired(req), nil
			}
			a.WaitUp(req.Context())
			if req.Context().Err() != nil {
				return resp, err
			}
		}
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func (a *APIServer) look() {
	ctx := context.Background()
	var away time.Time
	for {
		probeCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := a.probe(probeCtx)
		cancel()
		if err == nil {
			break
		}
		if away.IsZero() {
			away = time.Now()
			a.log.Info("the API server does not answer: reads wait for it, failed reconciles are retried when it is back", "error", err.Error())
		}
		time.Sleep(a.every)
	}
	if !away.IsZero() {
		a.log.Info("the API server answers again", "after", time.Since(away).Round(time.Millisecond).String())
	}
	a.mu.Lock()
	a.looking = false
	close(a.back) // also after a look that found it answering at once: WaitUp may wait on it
	a.back = make(chan struct{})
	var recovered []func()
	if !away.IsZero() {
		recovered = append(recovered, a.recovered...)
	}
	a.mu.Unlock()
	for _, f := range recovered {
		f()
	}
}

// resumesWatch tells whether req is a watch from a resourceVersion: an informer's watch
// after its stream ended, not a list and not a watch that starts with the current state
// (sendInitialEvents).
func resumesWatch(req *http.Request) bool {
	q := req.URL.Query()
	if w := q.Get("watch"); w != "true" && w != "1" {
		return false
	}
	rv := q.Get("resourceVersion")
	return rv != "" && rv != "0" && q.Get("sendInitialEvents") != "true"
}

// expired is the answer to a watch that would resume while the API server is away: 410
// Gone, as the API server itself gives for a resourceVersion its watch cache no longer
// holds. An API server that comes back has a new watch cache, which refuses every watch
// from before ("too old resource version") once it is back; the informer then lists
// again only after its backoff, which client-go neither lets us reset nor set, and which
// doubles with every restart within two minutes. Refused now, the watch makes the
// informer take that backoff while the API server is still away, and its list then waits
// here for it and goes out the moment it answers (fault/'s pending commit, four restarts
// in a row: applied 2.5, 3.1, 4.6 and 12.9 s after the API server was back before, 1.1,
// 1.0, 1.3 and 0.6 s after). Only a backoff longer than the outage still shows.
func expired(req *http.Request) *http.Response {
	const body = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
		`"message":"the API server does not answer: the watch starts again from a new list","reason":"Expired","code":410}`
	return &http.Response{
		Status:        "410 Gone",
		StatusCode:    http.StatusGone,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
