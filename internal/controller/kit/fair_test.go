package kit

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// A controller of 2 workers (controller-runtime's own, with its priority queue) has ten
// slow reconciles of namespace "a" queued before the one of namespace "b": with the
// cap per namespace (one of two workers, the default), "b" is served while "a" still
// has most of its queue, instead of after all of it.
func TestOneNamespaceCannotTakeEveryWorker(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	var order []string
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Namespace == "a" {
			time.Sleep(time.Second) // a slow render
		}
		mu.Lock()
		order = append(order, req.String())
		mu.Unlock()
		return reconcile.Result{}, nil
	})
	opts := Options{MaxConcurrentReconciles: 2, MaxConcurrentPerNamespace: 1}
	skip := true
	c, err := controller.NewUnmanaged("fair-test", controller.Options{Reconciler: PerNamespace(r, opts.perNamespace(), opts.MaxConcurrentReconciles),
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles, SkipNameValidation: &skip})
	g.Expect(err).NotTo(HaveOccurred())
	events := make(chan event.GenericEvent, 20)
	g.Expect(c.Watch(source.Channel(events, &handler.EnqueueRequestForObject{}))).To(Succeed())
	obj := func(ns, name string) client.Object {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	for i := range 10 {
		events <- event.GenericEvent{Object: obj("a", fmt.Sprintf("app-%d", i))}
	}
	events <- event.GenericEvent{Object: obj("b", "app")}
	go func() { _ = c.Start(ctx) }()

	g.Eventually(func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), order...)
	}).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(ContainElement("b/app"))
	mu.Lock()
	defer mu.Unlock()
	g.Expect(len(order)).To(BeNumerically("<=", 3), "b/app was served before most of a's queue: %v", order)
}

func TestPerNamespaceDefaults(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct{ workers, set, want int }{
		{workers: 4, want: 0}, {workers: 2, want: 0}, // off unless asked for
		{workers: 1, set: 1, want: 0}, {workers: 0, set: 1, want: 0}, // one worker: nothing to share
		{workers: 4, set: 1, want: 1}, {workers: 4, set: 2, want: 2}, {workers: 4, set: 4, want: 0}, {workers: 4, set: 9, want: 0},
	} {
		got := Options{MaxConcurrentReconciles: tc.workers, MaxConcurrentPerNamespace: tc.set}.perNamespace()
		g.Expect(got).To(Equal(tc.want), "workers %d, set %d", tc.workers, tc.set)
	}
}

// Alone, a namespace is not held to its cap: it has every worker but one (kept for
// another namespace's request); and a push or a request of it may take that one too. Held to half the workers, a one-namespace cold start of
// 50 Applications took 5.6–7.4 s instead of 3.4–3.8 s.
func TestOneNamespaceAloneHasAllButOneWorker(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	running, most := 0, 0
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return reconcile.Result{}, nil
	})
	opts := Options{MaxConcurrentReconciles: 4, MaxConcurrentPerNamespace: 2}
	capped := PerNamespace(r, opts.perNamespace(), opts.MaxConcurrentReconciles)
	var wg sync.WaitGroup
	put := 0
	var putMu sync.Mutex
	for i := range 4 {
		wg.Go(func() {
			res, _ := capped.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: fmt.Sprint(i)}})
			if res.RequeueAfter > 0 {
				putMu.Lock()
				put++
				putMu.Unlock()
			}
		})
		time.Sleep(20 * time.Millisecond) // in order: the fourth finds three running
	}
	wg.Wait()
	g.Expect(most).To(Equal(3))
	g.Expect(put).To(Equal(1))

	// What someone waits for (taken from the queue at HighPriority: a push, a request) may
	// take the last worker, with every other worker busy with the namespace's backlog.
	// Only one at a time, though: a second urgent one waits its turn.
	put, most = 0, 0
	for i := range 5 {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: fmt.Sprint(i)}}
		if i >= 3 {
			capped.(*namespaceCap).taken.Store(req, HighPriority)
		}
		wg.Go(func() {
			res, _ := capped.Reconcile(context.Background(), req)
			if res.RequeueAfter > 0 {
				putMu.Lock()
				put++
				putMu.Unlock()
			}
		})
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	g.Expect(most).To(Equal(4))
	g.Expect(put).To(Equal(1))
}
