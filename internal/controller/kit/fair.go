package kit

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Fair sharing between namespaces (tenants): a controller runs at most a few
// reconciles of one namespace at once (Options.MaxConcurrentPerNamespace; by default
// half its workers, rounded up) while the others are busy: a namespace may go over its
// cap as long as one worker stays free, so that a single namespace (most clusters, a cold
// start) still has every worker but one. A request over the cap is not reconciled: it
// goes back to the queue for a moment (RequeueAfter, which is no failure and keeps its
// priority) and the worker takes the next request, so another namespace's work is
// served while one namespace has many slow reconciles queued. What someone waits for —
// a request taken from the queue at HighPriority or above (a push, a sync request, a new
// revision: see priority.go) — is never put back: only the backlog (a cold start's
// initial list, resyncs) is held to the cap, so a namespace's push is not delayed by its
// own backlog being walked past. This is simpler than a
// queue of its own per namespace (controller-runtime's priority queue stays as it is,
// with its priorities and deduplication) and it is enough: a request put back costs no
// API call.

// namespaceRetry is how soon a request over its namespace's cap is looked at again.
const namespaceRetry = 100 * time.Millisecond

// PerNamespace wraps r, run by workers workers, so that at most max reconciles of one
// namespace run at once while fewer than one worker would stay free (max < 1: no cap).
func PerNamespace(r reconcile.Reconciler, max, workers int) reconcile.Reconciler {
	if max < 1 {
		return r
	}
	return &namespaceCap{inner: r, max: max, workers: workers, running: map[string]int{}}
}

type namespaceCap struct {
	inner        reconcile.Reconciler
	max, workers int
	// taken holds the priority each request was last taken from the queue with
	// (controller-runtime does not hand it to the reconciler).
	taken sync.Map

	mu      sync.Mutex
	running map[string]int
	total   int
}

func (c *namespaceCap) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	priority, _ := c.taken.LoadAndDelete(req)
	urgent, _ := priority.(int)
	if !c.enter(req.Namespace, urgent >= HighPriority) {
		return reconcile.Result{RequeueAfter: namespaceRetry}, nil
	}
	defer c.leave(req.Namespace)
	return c.inner.Reconcile(ctx, req)
}

// newQueue is controller-runtime's priority queue, telling c the priority of each
// request it hands out.
func (c *namespaceCap) newQueue(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return takenWith{PriorityQueue: priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
		o.RateLimiter = limiter
	}), taken: &c.taken}
}

type takenWith struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	taken *sync.Map
}

func (q takenWith) GetWithPriority() (reconcile.Request, int, bool) {
	req, priority, shutdown := q.PriorityQueue.GetWithPriority()
	if !shutdown {
		q.taken.Store(req, priority)
	}
	return req, priority, shutdown
}

func (c *namespaceCap) enter(ns string, urgent bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !urgent && c.running[ns] >= c.max && c.total+1 >= c.workers {
		return false
	}
	c.running[ns]++
	c.total++
	return true
}

func (c *namespaceCap) leave(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.running[ns]--; c.running[ns] <= 0 {
		delete(c.running, ns)
	}
}

// perNamespace is the cap of o: MaxConcurrentPerNamespace, or half the workers rounded
// up (at least 1); 0 (no cap) when it would let one namespace take every worker anyway.
func (o Options) perNamespace() int {
	workers := max(o.MaxConcurrentReconciles, 1)
	n := o.MaxConcurrentPerNamespace
	if n <= 0 {
		n = (workers + 1) / 2
	}
	if n >= workers {
		return 0
	}
	return n
}
