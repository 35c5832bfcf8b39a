package kit

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A cap per namespace, when asked for (--max-concurrent-per-namespace): a controller
// runs at most Options.MaxConcurrentPerNamespace reconciles of one namespace at once while
// the others are busy: a namespace may go over its cap as long as one worker stays free,
// so that a single namespace still has every worker but one. A request over the cap is
// not reconciled: it goes back to the queue for a moment (RequeueAfter, which is no
// failure and keeps its priority) and the worker takes the next request. What someone
// waits for — a request taken from the queue at HighPriority or above (a push, a sync
// request, a new revision: see priority.go) — may go over the cap, one at a time per
// namespace.
//
// The fair queue (fairqueue.go, on by default) is what shares the workers between
// namespaces; this cap is off by default and only bounds how many workers one
// namespace's slow reconciles hold at once. Alone it cost a one-namespace install: the
// backlog walked past is served slowly (after a restart with 1,000 Applications in one
// namespace, restoring their drift protection was still going on 90 s later instead of
// done in about a second).

// namespaceRetry is how soon a request over its namespace's cap is looked at again.
const namespaceRetry = 100 * time.Millisecond

// PerNamespace wraps r, run by workers workers, so that at most max reconciles of one
// namespace run at once while fewer than one worker would stay free (max < 1: no cap).
func PerNamespace(r reconcile.Reconciler, max, workers int) reconcile.Reconciler {
	if max < 1 {
		return r
	}
	return &namespaceCap{inner: r, max: max, workers: workers, running: map[string]int{}, urgent: map[string]int{}}
}

type namespaceCap struct {
	inner        reconcile.Reconciler
	max, workers int
	// taken holds the priority each request was last taken from the queue with
	// (controller-runtime does not hand it to the reconciler).
	taken sync.Map

	mu      sync.Mutex
	running map[string]int
	// urgent counts the running reconciles of a namespace that went over its cap.
	urgent map[string]int
	total  int
}

func (c *namespaceCap) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	priority, _ := c.taken.LoadAndDelete(req)
	urgent, _ := priority.(int)
	over, ok := c.enter(req.Namespace, urgent >= HighPriority)
	if !ok {
		return reconcile.Result{RequeueAfter: namespaceRetry}, nil
	}
	defer c.leave(req.Namespace, over)
	return c.inner.Reconcile(ctx, req)
}

// newQueue returns the constructor of the queue of inner (controller-runtime's priority
// queue when nil), telling c the priority of each request it hands out.
func (c *namespaceCap) newQueue(inner func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request]) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		if inner != nil {
			if pq, ok := inner(name, limiter).(priorityqueue.PriorityQueue[reconcile.Request]); ok {
				return takenWith{PriorityQueue: pq, taken: &c.taken}
			}
		}
		return takenWith{PriorityQueue: priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
			o.RateLimiter = limiter
		}), taken: &c.taken}
	}
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

// enter counts a reconcile of ns in, unless it is over the cap (and not an urgent one
// while no other of ns is over it); over tells that it went over the cap.
func (c *namespaceCap) enter(ns string, urgent bool) (over, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	over = c.running[ns] >= c.max && c.total+1 >= c.workers
	if over && (!urgent || c.urgent[ns] > 0) {
		return false, false
	}
	if over {
		c.urgent[ns]++
	}
	c.running[ns]++
	c.total++
	return over, true
}

func (c *namespaceCap) leave(ns string, over bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if over {
		if c.urgent[ns]--; c.urgent[ns] <= 0 {
			delete(c.urgent, ns)
		}
	}
	if c.running[ns]--; c.running[ns] <= 0 {
		delete(c.running, ns)
	}
}

// perNamespace is the cap of o: MaxConcurrentPerNamespace; 0 (no cap) when unset or
// when it would let one namespace take every worker anyway.
func (o Options) perNamespace() int {
	workers := max(o.MaxConcurrentReconciles, 1)
	n := o.MaxConcurrentPerNamespace
	if n <= 0 {
		return 0
	}
	if n >= workers {
		return 0
	}
	return n
}
