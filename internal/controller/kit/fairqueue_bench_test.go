package kit

import (
	"fmt"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// BenchmarkInProcessQueue (in process, no API server): b.N distinct requests added (a
// third each at LowPriority, 0 and HighPriority) while 4 workers take them and call Done,
// through the fair queue and through controller-runtime's priority queue (shared: one
// queue for every namespace, what the controllers had before). ns=1 is a one-namespace
// install; ns=100 spreads the same requests over 100 namespaces. One op is one request
// added, handed out and done.
func BenchmarkInProcessQueue(b *testing.B) {
	queues := []struct {
		name string
		new  func() priorityqueue.PriorityQueue[reconcile.Request]
	}{
		{"fair", func() priorityqueue.PriorityQueue[reconcile.Request] { return NewFairQueue("test", nil) }},
		{"shared", func() priorityqueue.PriorityQueue[reconcile.Request] {
			return priorityqueue.New[reconcile.Request]("bench")
		}},
	}
	for _, namespaces := range []int{1, 100} {
		for _, qc := range queues {
			b.Run(fmt.Sprintf("%s/ns=%d", qc.name, namespaces), func(b *testing.B) {
				reqs := make([]reconcile.Request, b.N)
				for i := range reqs {
					reqs[i] = req(fmt.Sprintf("ns-%d", i%namespaces), fmt.Sprintf("app-%d", i))
				}
				priorities := []int{LowPriority, 0, HighPriority}
				q := qc.new()
				defer q.ShutDown()
				var left atomic.Int64
				left.Store(int64(b.N))
				done := make(chan struct{})
				b.ResetTimer()
				for range 4 {
					go func() {
						for {
							r, _, shutdown := q.GetWithPriority()
							if shutdown {
								return
							}
							q.Done(r)
							if left.Add(-1) == 0 {
								close(done)
							}
						}
					}()
				}
				for i, r := range reqs {
					q.AddWithOpts(priorityqueue.AddOpts{Priority: &priorities[i%3]}, r)
				}
				<-done
				b.StopTimer()
			})
		}
	}
}
