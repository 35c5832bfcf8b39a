package kit

import (
	"container/heap"
	"container/list"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// FairQueue is a controller's queue that is fair between namespaces (tenants): it keeps
// the ready requests of each namespace apart and hands them out round-robin over the
// namespaces that have one, so that a namespace with 1,000 queued reconciles delays
// another namespace's request by at most one request per worker, whatever their
// priorities. Within a namespace it is controller-runtime's priority queue: higher
// priority first, first in first out within a priority (an item that waited, AddAfter or
// AddRateLimited, counts from when it became ready), deduplication (an item queued
// again keeps the higher of its priorities and the earlier of its ready times), an item
// handed out is not handed out again before Done (if added meanwhile, it is queued on
// Done), rate limiting by the controller's limiter.
//
// Why not the priority queue with something on top: its order is fixed when an item is
// added, while fairness depends on what the other namespaces have ready when a worker
// asks; a cap on the reconciles of a namespace that run at once (fair.go) has to walk
// past the capped namespace's backlog and serves it slowly. One priority queue per
// namespace would start four goroutines per namespace and cannot be asked "anything
// ready?" without blocking. So the queue is written here, small: per namespace, one
// FIFO list per priority level (the levels are the few priorities of priority.go), and a
// FIFO of the namespaces with ready items; every step is O(1) for one namespace (a map
// lookup and list operations), and a heap holds the items that wait.
//
// Across namespaces, priority does not count: a tenant could flood its own
// Applications with sync requests (HighPriority) and starve every other namespace's
// ordinary work. The cost: a push in one of many namespaces with a cold backlog waits
// for one request of each of them (with 4 workers, 1,000 such namespaces: about 250
// reconciles' time), where the shared queue served it first.
type FairQueue struct {
	limiter workqueue.TypedRateLimiter[reconcile.Request]

	mu   sync.Mutex
	cond *sync.Cond
	// entries are the queued requests: ready, waiting, or parked (added while handed out).
	entries map[reconcile.Request]*entry
	// spaces are the namespaces with ready requests; turns orders them (the front is next).
	spaces map[string]*space
	turns  list.List
	ready  int
	// waiting are the requests not ready before their time, earliest first.
	waiting waitHeap
	// out are the requests handed out and not yet Done, with when.
	out      map[reconcile.Request]time.Time
	shutdown bool
	metrics  queueMetrics

	// added numbers the entries, so that those ready at the same time keep their order.
	added uint64

	waitingChanged chan struct{}
	done           chan struct{}
	now            func() time.Time
}

type entry struct {
	req      reconcile.Request
	priority int
	added    uint64
	// readyAt is when a waiting or parked entry is ready; zero: now. readySince is when
	// a ready one became ready.
	readyAt, readySince time.Time
	parked              bool
	// elem is the entry's element in its level's list while ready; index its place in
	// the waiting heap while waiting (-1 otherwise).
	elem  *list.Element
	level *level
	index int
}

// space is a namespace's ready requests, by priority level (highest first).
type space struct {
	name   string
	levels []*level
	turn   *list.Element
}

type level struct {
	priority int
	items    list.List
}

var _ priorityqueue.PriorityQueue[reconcile.Request] = (*FairQueue)(nil)

// NewFairQueue returns the fair queue of the controller name, using limiter for
// AddRateLimited (controller-runtime's default limiter when nil). ShutDown stops it.
func NewFairQueue(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) *FairQueue {
	if limiter == nil {
		limiter = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 1000*time.Second)
	}
	q := &FairQueue{
		limiter:        limiter,
		entries:        map[reconcile.Request]*entry{},
		spaces:         map[string]*space{},
		out:            map[reconcile.Request]time.Time{},
		metrics:        newQueueMetrics(name),
		waitingChanged: make(chan struct{}, 1),
		done:           make(chan struct{}),
		now:            time.Now,
	}
	q.cond = sync.NewCond(&q.mu)
	go q.moveWhenReady()
	return q
}

// NewQueue is the constructor of the queue for controller.Options.NewQueue: a fair
// queue, or nil (controller-runtime's priority queue, shared by every namespace) when
// shared.
func NewQueue(shared bool) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	if shared {
		return nil
	}
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return NewFairQueue(name, limiter)
	}
}

// AddWithOpts queues items: after o.After (or the limiter's delay, when o.RateLimited,
// whichever is shorter), at o.Priority (0 when nil).
func (q *FairQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	priority := 0
	if o.Priority != nil {
		priority = *o.Priority
	}
	now := q.now()
	for _, req := range items {
		after := o.After
		if o.RateLimited {
			if d := q.limiter.When(req); after == 0 || d < after {
				after = d
			}
		}
		var readyAt time.Time
		if after > 0 {
			readyAt = now.Add(after)
			q.metrics.retries.Inc()
		}
		q.add(req, priority, readyAt)
	}
}

func (q *FairQueue) add(req reconcile.Request, priority int, readyAt time.Time) {
	e, ok := q.entries[req]
	if !ok {
		e = &entry{req: req, priority: priority, readyAt: readyAt, added: q.added, index: -1}
		q.added++
		q.entries[req] = e
		switch _, out := q.out[req]; {
		case out:
			e.parked = true
		case !readyAt.IsZero():
			q.wait(e)
		default:
			q.makeReady(e)
		}
		return
	}
	switch {
	case e.parked:
		e.priority = max(e.priority, priority)
		if readyAt.IsZero() || readyAt.Before(e.readyAt) {
			e.readyAt = readyAt
		}
	case e.elem != nil: // ready: may move up to a higher level, at its end
		if priority > e.priority {
			q.unready(e)
			e.priority = priority
			q.makeReady(e)
		}
	default: // waiting
		e.priority = max(e.priority, priority)
		if readyAt.IsZero() {
			heap.Remove(&q.waiting, e.index)
			e.readyAt = time.Time{}
			q.makeReady(e)
		} else if readyAt.Before(e.readyAt) {
			e.readyAt = readyAt
			heap.Fix(&q.waiting, e.index)
			q.notifyWaiting()
		}
	}
}

// makeReady puts e at the end of its priority's list in its namespace, and the namespace
// in the turns if it had nothing ready.
func (q *FairQueue) makeReady(e *entry) {
	s := q.spaces[e.req.Namespace]
	if s == nil {
		s = &space{name: e.req.Namespace}
		q.spaces[s.name] = s
		s.turn = q.turns.PushBack(s)
	}
	i := 0
	for i < len(s.levels) && s.levels[i].priority > e.priority {
		i++
	}
	if i == len(s.levels) || s.levels[i].priority != e.priority {
		s.levels = append(s.levels, nil)
		copy(s.levels[i+1:], s.levels[i:])
		s.levels[i] = &level{priority: e.priority}
	}
	e.level = s.levels[i]
	e.elem = e.level.items.PushBack(e)
	e.readySince = q.now()
	q.ready++
	q.metrics.adds.Inc()
	q.metrics.depth.Inc()
	q.cond.Signal()
}

// unready takes the ready e out of its namespace's lists (and the namespace out of the
// turns when nothing else of it is ready).
func (q *FairQueue) unready(e *entry) {
	e.level.items.Remove(e.elem)
	e.elem = nil
	q.ready--
	q.metrics.depth.Dec()
	s := q.spaces[e.req.Namespace]
	if e.level.items.Len() == 0 {
		for i, l := range s.levels {
			if l == e.level {
				s.levels = append(s.levels[:i], s.levels[i+1:]...)
				break
			}
		}
	}
	e.level = nil
	if len(s.levels) == 0 {
		q.turns.Remove(s.turn)
		delete(q.spaces, s.name)
	}
}

func (q *FairQueue) wait(e *entry) {
	heap.Push(&q.waiting, e)
	q.notifyWaiting()
}

func (q *FairQueue) notifyWaiting() {
	select {
	case q.waitingChanged <- struct{}{}:
	default:
	}
}

// GetWithPriority blocks until a request is ready and hands out the first of the
// namespace whose turn it is, with the priority it was queued at; shutdown is true
// once the queue is shut down.
func (q *FairQueue) GetWithPriority() (reconcile.Request, int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.shutdown && q.ready == 0 {
		q.cond.Wait()
	}
	if q.shutdown {
		return reconcile.Request{}, 0, true
	}
	s := q.turns.Front().Value.(*space)
	e := s.levels[0].items.Front().Value.(*entry)
	q.unready(e)
	if s.turn != nil && q.spaces[s.name] == s {
		q.turns.MoveToBack(s.turn) // the next namespace's turn
	}
	delete(q.entries, e.req)
	now := q.now()
	q.out[e.req] = now
	q.metrics.latency.Observe(now.Sub(e.readySince).Seconds())
	return e.req, e.priority, false
}

// Get is GetWithPriority without the priority.
func (q *FairQueue) Get() (reconcile.Request, bool) {
	req, _, shutdown := q.GetWithPriority()
	return req, shutdown
}

// Done ends the handing out of req; if it was queued meanwhile, it is queued now.
func (q *FairQueue) Done(req reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if since, ok := q.out[req]; ok {
		q.metrics.works.Observe(q.now().Sub(since).Seconds())
		delete(q.out, req)
	}
	e, ok := q.entries[req]
	if !ok || !e.parked {
		return
	}
	e.parked = false
	if !e.readyAt.IsZero() && e.readyAt.After(q.now()) {
		q.wait(e)
		return
	}
	e.readyAt = time.Time{}
	q.makeReady(e)
}

// moveWhenReady makes the waiting requests ready at their time, until ShutDown.
func (q *FairQueue) moveWhenReady() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		q.mu.Lock()
		now := q.now()
		for len(q.waiting) > 0 && !q.waiting[0].readyAt.After(now) {
			e := heap.Pop(&q.waiting).(*entry)
			e.readyAt = time.Time{}
			q.makeReady(e)
		}
		next := time.Hour
		if len(q.waiting) > 0 {
			next = q.waiting[0].readyAt.Sub(now)
		}
		q.mu.Unlock()
		timer.Reset(next)
		select {
		case <-q.done:
			return
		case <-q.waitingChanged:
		case <-timer.C:
		}
	}
}

// Add queues item now at priority 0.
func (q *FairQueue) Add(item reconcile.Request) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

// AddAfter queues item after d.
func (q *FairQueue) AddAfter(item reconcile.Request, d time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: d}, item)
}

// AddRateLimited queues item after the limiter's delay.
func (q *FairQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// Forget ends item's backoff in the limiter.
func (q *FairQueue) Forget(item reconcile.Request) { q.limiter.Forget(item) }

// NumRequeues is how many times the limiter delayed item since it was last forgotten.
func (q *FairQueue) NumRequeues(item reconcile.Request) int { return q.limiter.NumRequeues(item) }

// Len is the number of ready requests (not the waiting or parked ones).
func (q *FairQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready
}

// ShutDown stops the queue: Get returns shutdown, adds are ignored.
func (q *FairQueue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	q.shutdown = true
	close(q.done)
	q.cond.Broadcast()
}

// ShutDownWithDrain is ShutDown (controller-runtime does not drain its queues either).
func (q *FairQueue) ShutDownWithDrain() { q.ShutDown() }

// ShuttingDown tells whether ShutDown was called.
func (q *FairQueue) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutdown
}

// waitHeap orders waiting entries by ready time.
type waitHeap []*entry

func (h waitHeap) Len() int { return len(h) }
func (h waitHeap) Less(i, j int) bool {
	if !h[i].readyAt.Equal(h[j].readyAt) {
		return h[i].readyAt.Before(h[j].readyAt)
	}
	return h[i].added < h[j].added
}
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *waitHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *waitHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
