package helm

import (
	"context"
	"sync"
)

// slotQueue hands out the process's render slots fairly between namespaces. A render
// takes a free slot at once when nobody waits (one namespace alone uses every slot, as
// fast as a plain semaphore). Once renders wait, each slot that frees goes to a waiting
// namespace that holds no slot if there is one, else to the next waiting namespace in
// turn (round-robin, each namespace's renders first in, first out): a namespace whose
// charts loop can hold at most the slots it took while nobody waited, and never gets
// another one while another namespace waits.
type slotQueue struct {
	mu       sync.Mutex
	capacity int
	inUse    int
	held     map[string]int
	waiting  map[string][]*slotWaiter
	order    []string // namespaces with renders waiting, next in turn first
}

type slotWaiter struct {
	ns      string
	ready   chan struct{}
	granted bool
}

func newSlotQueue(capacity int) *slotQueue {
	return &slotQueue{capacity: capacity, held: map[string]int{}, waiting: map[string][]*slotWaiter{}}
}

// acquire waits for a slot for a render of ns, or for ctx. The returned release gives
// the slot back (once, however often it is called).
func (q *slotQueue) acquire(ctx context.Context, ns string) (func(), error) {
	w := q.enqueue(ns)
	select {
	case <-w.ready:
		return q.releaser(ns), nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	granted := w.granted
	if !granted {
		q.removeLocked(w)
	}
	q.mu.Unlock()
	if granted { // given a slot as ctx ended: pass it on
		q.releaser(ns)()
	}
	return nil, context.Cause(ctx)
}

// enqueue grants ns a slot at once when one is free and nobody waits, else queues it;
// the waiter's ready channel is closed once it holds a slot.
func (q *slotQueue) enqueue(ns string) *slotWaiter {
	w := &slotWaiter{ns: ns, ready: make(chan struct{})}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.inUse < q.capacity && len(q.order) == 0 {
		q.grantLocked(w)
		return w
	}
	if len(q.waiting[ns]) == 0 {
		q.order = append(q.order, ns)
	}
	q.waiting[ns] = append(q.waiting[ns], w)
	q.dispatchLocked()
	return w
}

func (q *slotQueue) releaser(ns string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.inUse--
			if q.held[ns]--; q.held[ns] <= 0 {
				delete(q.held, ns)
			}
			q.dispatchLocked()
		})
	}
}

func (q *slotQueue) grantLocked(w *slotWaiter) {
	q.inUse++
	q.held[w.ns]++
	w.granted = true
	close(w.ready)
}

// dispatchLocked hands the free slots to the waiters: a namespace without a slot first,
// else the next in turn; the namespace served goes to the end of the turn.
func (q *slotQueue) dispatchLocked() {
	for q.inUse < q.capacity && len(q.order) > 0 {
		i := 0
		for j, ns := range q.order {
			if q.held[ns] == 0 {
				i = j
				break
			}
		}
		ns := q.order[i]
		w := q.waiting[ns][0]
		q.waiting[ns] = q.waiting[ns][1:]
		q.order = append(q.order[:i:i], q.order[i+1:]...)
		if len(q.waiting[ns]) == 0 {
			delete(q.waiting, ns)
		} else {
			q.order = append(q.order, ns)
		}
		q.grantLocked(w)
	}
}

// removeLocked takes a waiter that gave up out of the queue.
func (q *slotQueue) removeLocked(w *slotWaiter) {
	list := q.waiting[w.ns]
	for i, x := range list {
		if x == w {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) > 0 {
		q.waiting[w.ns] = list
		return
	}
	delete(q.waiting, w.ns)
	for i, ns := range q.order {
		if ns == w.ns {
			q.order = append(q.order[:i:i], q.order[i+1:]...)
			break
		}
	}
}

// stats are the slots in use and the renders waiting, per namespace.
func (q *slotQueue) stats() (inUse int, waiting map[string]int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	waiting = make(map[string]int, len(q.waiting))
	for ns, l := range q.waiting {
		waiting[ns] = len(l)
	}
	return q.inUse, waiting
}
