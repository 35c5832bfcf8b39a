package renderworker

// fairQueue holds the renders waiting for a worker, one FIFO per namespace, and serves
// the namespaces round-robin: a namespace with many renders waiting gets one worker in
// its turn, not every worker that frees up. The pool's lock guards it.
type fairQueue struct {
	waiting map[string][]chan *worker
	order   []string // namespaces with renders waiting, next first
}

// push queues a render of ns; the channel receives its worker.
func (q *fairQueue) push(ns string) chan *worker {
	if q.waiting == nil {
		q.waiting = map[string][]chan *worker{}
	}
	c := make(chan *worker, 1)
	if len(q.waiting[ns]) == 0 {
		q.order = append(q.order, ns)
	}
	q.waiting[ns] = append(q.waiting[ns], c)
	return c
}

// pop takes the next namespace's first render (nil: none waits) and moves that namespace
// to the end of the turn.
func (q *fairQueue) pop() chan *worker {
	if len(q.order) == 0 {
		return nil
	}
	ns := q.order[0]
	q.order = q.order[1:]
	list := q.waiting[ns]
	c := list[0]
	if len(list) == 1 {
		delete(q.waiting, ns)
	} else {
		q.waiting[ns] = list[1:]
		q.order = append(q.order, ns)
	}
	return c
}

// remove takes back c, a render of ns that stopped waiting; false when c was popped.
func (q *fairQueue) remove(ns string, c chan *worker) bool {
	list := q.waiting[ns]
	for i, x := range list {
		if x != c {
			continue
		}
		list = append(list[:i:i], list[i+1:]...)
		if len(list) > 0 {
			q.waiting[ns] = list
			return true
		}
		delete(q.waiting, ns)
		for j, o := range q.order {
			if o == ns {
				q.order = append(q.order[:j:j], q.order[j+1:]...)
				break
			}
		}
		return true
	}
	return false
}

// waits tells whether any render waits (a namespace in order has one at least).
func (q *fairQueue) waits() bool { return len(q.order) > 0 }
