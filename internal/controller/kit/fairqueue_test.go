package kit

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

func at(p int) priorityqueue.AddOpts { return priorityqueue.AddOpts{Priority: &p} }

// take hands out n requests, each Done at once, as "ns/name@priority".
func take(q *FairQueue, n int) []string {
	var out []string
	for range n {
		r, p, shutdown := q.GetWithPriority()
		if shutdown {
			return append(out, "shutdown")
		}
		q.Done(r)
		out = append(out, fmt.Sprintf("%s@%d", r, p))
	}
	return out
}

// Namespaces take turns, in the order they first had something ready; within a
// namespace, higher priority first, then first in first out. Across namespaces priority
// does not count: b's low-priority request goes before a's backlog of high ones.
func TestFairQueueTakesNamespacesInTurn(t *testing.T) {
	g := NewWithT(t)
	q := NewFairQueue("test", nil)
	defer q.ShutDown()
	for i := range 5 {
		q.Add(req("a", fmt.Sprint(i)))
	}
	q.AddWithOpts(at(LowPriority), req("b", "0"))
	q.Add(req("c", "0"))
	q.Add(req("c", "1"))
	q.AddWithOpts(at(HighPriority), req("a", "urgent"))
	g.Expect(q.Len()).To(Equal(9))
	g.Expect(take(q, 9)).To(Equal([]string{
		"a/urgent@100", "b/0@-100", "c/0@0", "a/0@0", "c/1@0", "a/1@0", "a/2@0", "a/3@0", "a/4@0"}))
	g.Expect(q.Len()).To(BeZero())

	// A namespace that empties leaves the turns; back, it joins their end: behind a,
	// which had its turn before b came, so b waits for one request of a.
	for i := range 3 {
		q.Add(req("a", fmt.Sprint(i)))
	}
	g.Expect(take(q, 1)).To(Equal([]string{"a/0@0"}))
	q.Add(req("b", "1"))
	g.Expect(take(q, 3)).To(Equal([]string{"a/1@0", "b/1@0", "a/2@0"}))
}

// Within a namespace the order is the priority queue's: by priority, first in first
// out within one, and an item queued again at a higher priority goes to the end of
// that priority's items (at a lower one it keeps its place).
func TestFairQueueKeepsPrioritiesWithinANamespace(t *testing.T) {
	g := NewWithT(t)
	q := NewFairQueue("test", nil)
	defer q.ShutDown()
	q.AddWithOpts(at(LowPriority), req("a", "cold-1"), req("a", "cold-2"), req("a", "cold-3"))
	q.Add(req("a", "created"))
	q.AddWithOpts(at(HighPriority), req("a", "push"))
	q.AddWithOpts(at(HighPriority), req("a", "cold-2"))
	q.AddWithOpts(at(LowPriority), req("a", "created"))
	g.Expect(q.Len()).To(Equal(5))
	g.Expect(take(q, 5)).To(Equal([]string{"a/push@100", "a/cold-2@100", "a/created@0", "a/cold-1@-100", "a/cold-3@-100"}))
}

// A request queued several times is handed out once; queued while handed out, it is
// handed out again after Done, not before (so no two workers reconcile it at once).
func TestFairQueueDeduplicates(t *testing.T) {
	g := NewWithT(t)
	q := NewFairQueue("test", nil)
	defer q.ShutDown()
	x := req("a", "x")
	q.Add(x)
	q.Add(x)
	q.AddWithOpts(at(HighPriority), x)
	g.Expect(q.Len()).To(Equal(1))
	got, p, _ := q.GetWithPriority()
	g.Expect(got).To(Equal(x))
	g.Expect(p).To(Equal(HighPriority))
	g.Expect(q.Len()).To(BeZero())

	q.Add(x)
	q.AddWithOpts(at(LowPriority), x)
	g.Expect(q.Len()).To(BeZero(), "x is handed out: queued, it waits for Done")
	q.Add(req("a", "y"))
	g.Expect(take(q, 1)).To(Equal([]string{"a/y@0"}))
	q.Done(x)
	g.Expect(q.Len()).To(Equal(1))
	g.Expect(take(q, 1)).To(Equal([]string{"a/x@0"}))
	g.Expect(q.Len()).To(BeZero())
}

// AddAfter and AddRateLimited: not ready before their time, the earliest time wins, an
// Add makes a waiting item ready at once; the limiter counts, Forget resets it.
func TestFairQueueAddAfter(t *testing.T) {
	g := NewWithT(t)
	q := NewFairQueue("test", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Hour, time.Hour))
	defer q.ShutDown()
	later, soon, now := req("a", "later"), req("b", "soon"), req("c", "now")
	q.AddAfter(later, time.Hour)
	q.AddAfter(soon, time.Hour)
	q.AddAfter(now, time.Hour)
	q.AddRateLimited(later) // an hour too: still waiting
	g.Expect(q.NumRequeues(later)).To(Equal(1))
	g.Expect(q.Len()).To(BeZero())

	q.Add(now)
	g.Expect(q.Len()).To(Equal(1))
	g.Expect(take(q, 1)).To(Equal([]string{"c/now@0"}))

	q.AddWithOpts(priorityqueue.AddOpts{After: 20 * time.Millisecond, Priority: new(HighPriority)}, soon)
	got := make(chan string, 1)
	go func() { got <- take(q, 1)[0] }()
	g.Eventually(got).WithTimeout(10 * time.Second).Should(Receive(Equal("b/soon@100")))
	g.Expect(q.Len()).To(BeZero(), "later waits its hour")

	q.Forget(later)
	g.Expect(q.NumRequeues(later)).To(BeZero())

	// Handed out, then queued with a delay: after Done it waits for its time.
	q.Add(now)
	r, _ := q.Get()
	q.AddAfter(now, time.Hour)
	q.Done(r)
	g.Expect(q.Len()).To(BeZero())
	q.Add(now)
	g.Expect(take(q, 1)).To(Equal([]string{"c/now@0"}))
}

// ShutDown releases the workers waiting in Get, and the queue takes nothing more.
func TestFairQueueShutDown(t *testing.T) {
	g := NewWithT(t)
	q := NewFairQueue("test", nil)
	got := make(chan bool, 2)
	for range 2 {
		go func() {
			_, _, shutdown := q.GetWithPriority()
			got <- shutdown
		}()
	}
	q.ShutDown()
	g.Eventually(got).WithTimeout(10 * time.Second).Should(Receive(BeTrue()))
	g.Eventually(got).WithTimeout(10 * time.Second).Should(Receive(BeTrue()))
	g.Expect(q.ShuttingDown()).To(BeTrue())
	q.Add(req("a", "x"))
	g.Expect(q.Len()).To(BeZero())
	_, shutdown := q.Get()
	g.Expect(shutdown).To(BeTrue())
	q.ShutDown() // twice is fine
}

// The fair queue reports controller-runtime's workqueue metrics under the controller's
// name: depth (ready requests), adds, retries, time queued and time worked.
func TestFairQueueReportsWorkqueueMetrics(t *testing.T) {
	g := NewWithT(t)
	q := NewFairQueue("fair-metrics-test", nil)
	defer q.ShutDown()
	q.Add(req("a", "x"))
	q.Add(req("b", "y"))
	q.AddAfter(req("a", "z"), time.Hour)
	r, _ := q.Get()
	q.Done(r)
	got := map[string]float64{}
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == "fair-metrics-test" {
					switch {
					case m.GetGauge() != nil:
						got[f.GetName()] = m.GetGauge().GetValue()
					case m.GetCounter() != nil:
						got[f.GetName()] = m.GetCounter().GetValue()
					case m.GetHistogram() != nil:
						got[f.GetName()] = float64(m.GetHistogram().GetSampleCount())
					}
				}
			}
		}
	}
	g.Expect(got).To(Equal(map[string]float64{
		"workqueue_depth": 1, "workqueue_adds_total": 2, "workqueue_retries_total": 1,
		"workqueue_queue_duration_seconds": 1, "workqueue_work_duration_seconds": 1,
	}))
}
