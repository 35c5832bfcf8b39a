package kit

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Retries is a controller's retry limiter (RetryLimiter) that also remembers what is
// waiting to be retried after a failure: when the API server answers again after it did
// not (APIServer), each is retried at once and its backoff starts over.
type Retries struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	api *APIServer

	mu     sync.Mutex
	failed map[reconcile.Request]bool
	again  chan event.GenericEvent
}

// NewRetries returns the retry limiter of a controller (base, max: see RetryLimiter);
// with api, what failed while the API server was away is retried when it is back (add
// Source to the controller's watches). api may be nil.
func NewRetries(base, max time.Duration, api *APIServer) *Retries {
	r := &Retries{TypedRateLimiter: RetryLimiter(base, max), api: api,
		failed: map[reconcile.Request]bool{}, again: make(chan event.GenericEvent, 1024)}
	if api != nil {
		api.OnRecovered(r.retryNow)
	}
	return r
}

// When counts a failure of item and returns how long its retry waits.
func (r *Retries) When(item reconcile.Request) time.Duration {
	r.mu.Lock()
	r.failed[item] = true
	r.mu.Unlock()
	if r.api != nil {
		r.api.Failed()
	}
	return r.TypedRateLimiter.When(item)
}

// Forget ends item's backoff (it succeeded).
func (r *Retries) Forget(item reconcile.Request) {
	r.mu.Lock()
	delete(r.failed, item)
	r.mu.Unlock()
	r.TypedRateLimiter.Forget(item)
}

// Source is the controller's source of the retries made when the API server is back.
func (r *Retries) Source() source.Source {
	return ChannelAt(r.again, HighPriority)
}

// retryNow enqueues every item waiting for a retry, with its backoff reset.
func (r *Retries) retryNow() {
	r.mu.Lock()
	items := make([]reconcile.Request, 0, len(r.failed))
	for item := range r.failed {
		items = append(items, item)
	}
	r.mu.Unlock()
	for _, item := range items {
		r.TypedRateLimiter.Forget(item)
		select {
		case r.again <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: item.Name, Namespace: item.Namespace}}}:
		default: // a full channel: the item's own retry still comes
		}
	}
}

// Options tunes a controller: how many reconciles run at once and how failed ones are
// retried. The application and source controllers take it as their options.
type Options struct {
	MaxConcurrentReconciles int
	// MaxConcurrentPerNamespace, when set, caps the reconciles of one namespace that run
	// at once while another namespace waits (see fair.go); 0: no cap.
	MaxConcurrentPerNamespace int
	// SharedQueue gives the controller one queue for every namespace (controller-runtime's
	// priority queue) instead of the fair queue per namespace (FairQueue), the default.
	SharedQueue bool
	// RetryBase and RetryMax bound the exponential backoff after a failed reconcile.
	RetryBase, RetryMax time.Duration
	// APIServer, when set, has what failed while the API server was away retried as
	// soon as it answers again (see Retries).
	APIServer *APIServer
}

// Build builds the controller of b for r with the options (Apply) and the cap per
// namespace (PerNamespace), which reads the priority of each request from the queue.
func (o Options) Build(b *builder.Builder, r reconcile.Reconciler) (controller.Controller, error) {
	capped := PerNamespace(r, o.perNamespace(), o.MaxConcurrentReconciles)
	b, opts := o.withRetries(b)
	if c, ok := capped.(*namespaceCap); ok {
		opts.NewQueue = c.newQueue(opts.NewQueue)
	}
	return b.WithOptions(opts).Build(capped)
}

// Apply gives the controller of b its concurrency, its queue (fair between namespaces
// unless SharedQueue) and its retry limiter (with the source of the retries made when
// the API server is back).
func (o Options) Apply(b *builder.Builder) *builder.Builder {
	b, opts := o.withRetries(b)
	return b.WithOptions(opts)
}

// withRetries adds to b the source of the retries made when the API server is back, and
// returns the controller options of o (the caller may add to them: WithOptions takes
// them whole).
func (o Options) withRetries(b *builder.Builder) (*builder.Builder, controller.Options) {
	retries := NewRetries(o.RetryBase, o.RetryMax, o.APIServer)
	if o.APIServer != nil {
		b = b.WatchesRawSource(retries.Source())
	}
	return b, controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles, RateLimiter: retries,
		NewQueue: NewQueue(o.SharedQueue)}
}
